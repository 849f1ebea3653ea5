import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import type { TurnManifest } from '../contract/session-store.js'
import { MARKER_PATH, probeFidelity, SENTINEL_VARIABLE } from './fidelity.js'

// The mock provider (`@sandkeep/testing`) answers the manager's real fidelity probe, from its own state or
// through its `onProbe` hook: the tests of the manager that run on the mock depend on it.
describe('the fidelity probe on the mock provider', () => {
  it('answers the fidelity probe from its state, or through onProbe', async () => {
    const manifest = (sandboxId: string): TurnManifest => ({
      writtenAt: 0,
      sandboxId,
      memory: [{ language: 'python', contextId: null, variable: SENTINEL_VARIABLE, value: 's-1' }],
      filesystem: { path: MARKER_PATH, value: 'm-1' },
      processes: null,
    })
    const signal = new AbortController().signal
    const provider = createMockProvider()
    const sandbox = await provider.create({ metadata: {} })
    await sandbox.runCode(`${SENTINEL_VARIABLE} = 's-1'`)
    await sandbox.writeFile(MARKER_PATH, 'm-1')
    const kept = await probeFidelity({ sandbox, manifest: manifest(sandbox.id), signal })
    expect(kept.survived).toMatchObject({ memory: true, filesystem: true })
    expect(provider.callsOf('runCode')).toHaveLength(2)

    const asked: unknown[] = []
    const hooked = createMockProvider({
      onProbe: (probe) => {
        asked.push(probe)
        return { sentinel: 'other', marker: null }
      },
    })
    const other = await hooked.create({ metadata: {} })
    const lost = await probeFidelity({ sandbox: other, manifest: manifest(other.id), signal })
    expect(lost.survived).toMatchObject({ memory: false, filesystem: false })
    expect(asked).toEqual([{ context: 'python:default', variable: SENTINEL_VARIABLE, path: MARKER_PATH }])
  })
})
