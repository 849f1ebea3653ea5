// The demo's embedded local-e2b host: the provider on it declares what the host's snapshots really keep
// (files, not memory), so checkpoints taken on it never claim a memory they did not keep.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { openE2BProvider } from '../src/config.js'
import { startEmbeddedHost } from '../src/demo/host.js'

it("the embedded host's provider declares snapshots of files only, and a sandbox from one has exactly that", async () => {
  const stateDir = await mkdtemp(join(tmpdir(), 'sandkeep-cli-embedded-'))
  const host = await startEmbeddedHost({ pauseMode: 'memory', stateDir })
  try {
    const provider = await openE2BProvider(host.connection)
    expect(provider.snapshotKeeps).toEqual({ files: true, memory: false })
    const source = await provider.create({ metadata: {} })
    await source.writeFile('/home/user/kept.txt', 'kept')
    await source.runCode('kept_value = 7')
    const { snapshotId } = await provider.createSnapshot!(source.id)
    const copy = await provider.createFromSnapshot!(snapshotId, { metadata: {} })
    expect(await copy.readFile('/home/user/kept.txt')).toBe('kept')
    expect((await copy.runCode("globals().get('kept_value')")).text).toBeNull()
  } finally {
    await host.close()
    await rm(stateDir, { recursive: true, force: true })
  }
})
