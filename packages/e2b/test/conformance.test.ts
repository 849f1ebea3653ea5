// The E2B provider against a real local-e2b host through the unmodified SDK, once per pause fidelity (with
// local-e2b's snapshots, which keep files only), and
// against the real E2B only when asked for (SANDKEEP_E2B_LIVE=1 and E2B_API_KEY).

import {
  type LocalE2BHost,
  PAUSE_MODE_METADATA_KEY,
  type PauseMode,
  startLocalE2B,
} from '@sandkeep/local-e2b'
import { sandboxProviderConformance } from '@sandkeep/testing'
import { afterAll } from 'vitest'
import { createE2BProvider } from '../src/index.js'

const hosts: LocalE2BHost[] = []
afterAll(async () => {
  await Promise.all(hosts.map((host) => host.close()))
})

// local-e2b's snapshots keep the files, not the memory (its README, "Snapshots and fork").
const LOCAL_SNAPSHOTS_KEEP = { files: true, memory: false }
const localOptions = (host: LocalE2BHost) => ({
  apiKey: host.apiKey,
  apiUrl: host.apiUrl,
  sandboxUrl: host.sandboxUrl,
  snapshots: { keepsMemory: false },
})

const fidelity = {
  memory: { memory: true, filesystem: true, processes: true },
  filesystem: { memory: false, filesystem: true, processes: false },
  processes: { memory: false, filesystem: false, processes: 'restarted' },
} as const

for (const mode of Object.keys(fidelity) as PauseMode[]) {
  sandboxProviderConformance({
    name: `e2b provider on local-e2b (pauseMode ${mode})`,
    provider: async () => {
      const host = await startLocalE2B({ pauseMode: mode, logger: () => {} })
      hosts.push(host)
      return createE2BProvider(localOptions(host))
    },
    pauseKeeps: fidelity[mode],
    snapshotKeeps: LOCAL_SNAPSHOTS_KEEP,
    reachablePorts: true,
  })
}

// The same fidelity chosen per sandbox (metadata) rather than per host.
sandboxProviderConformance({
  name: 'e2b provider on local-e2b (pause mode from sandbox metadata: filesystem)',
  provider: async () => {
    const host = await startLocalE2B({ pauseMode: 'memory', logger: () => {} })
    hosts.push(host)
    return createE2BProvider(localOptions(host))
  },
  metadata: { [PAUSE_MODE_METADATA_KEY]: 'filesystem' },
  pauseKeeps: fidelity.filesystem,
  snapshotKeeps: LOCAL_SNAPSHOTS_KEEP,
})

const live = process.env.SANDKEEP_E2B_LIVE === '1' && Boolean(process.env.E2B_API_KEY)
sandboxProviderConformance({
  name: 'e2b provider on E2B cloud',
  skip: live ? false : 'set SANDKEEP_E2B_LIVE=1 and E2B_API_KEY to run against the real E2B',
  provider: () => createE2BProvider(),
  snapshotKeeps: { files: true, memory: true },
  reachablePorts: true,
})
