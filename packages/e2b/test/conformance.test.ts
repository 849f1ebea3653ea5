// The E2B provider against a real local-e2b host through the unmodified SDK, once per pause fidelity, and
// against the real E2B only when asked for (SANDKEEP_E2B_LIVE=1 and E2B_API_KEY).
import { sandboxProviderConformance } from '@sandkeep/core/test'
import {
  type LocalE2BHost,
  PAUSE_MODE_METADATA_KEY,
  type PauseMode,
  startLocalE2B,
} from '@sandkeep/local-e2b'
import { afterAll } from 'vitest'
import { createE2BProvider } from '../src/index.js'

const hosts: LocalE2BHost[] = []
afterAll(async () => {
  await Promise.all(hosts.map((host) => host.close()))
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
      return createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl })
    },
    pauseKeeps: fidelity[mode],
    reachablePorts: true,
  })
}

// The same fidelity chosen per sandbox (metadata) rather than per host.
sandboxProviderConformance({
  name: 'e2b provider on local-e2b (pause mode from sandbox metadata: filesystem)',
  provider: async () => {
    const host = await startLocalE2B({ pauseMode: 'memory', logger: () => {} })
    hosts.push(host)
    return createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl })
  },
  metadata: { [PAUSE_MODE_METADATA_KEY]: 'filesystem' },
  pauseKeeps: fidelity.filesystem,
})

const live = process.env.SANDKEEP_E2B_LIVE === '1' && Boolean(process.env.E2B_API_KEY)
sandboxProviderConformance({
  name: 'e2b provider on E2B cloud',
  skip: live ? false : 'set SANDKEEP_E2B_LIVE=1 and E2B_API_KEY to run against the real E2B',
  provider: () => createE2BProvider(),
  reachablePorts: true,
})
