import { describe, expect, it } from 'vitest'
import type { FidelityOutcome } from '../assessment/fidelity.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import type { TurnManifest } from '../contract/session-store.js'
import { reviseMarkerLoss } from './marker-verdict.js'

const manifest = {
  filesystem: { path: '/home/user/.sandkeep/marker', value: 'm-1' },
} as unknown as TurnManifest

/** What the probes said when the marker was gone and no witness decided. */
function markerGone(memory: boolean | null): FidelityOutcome {
  return {
    checks: [
      { name: 'memory', kind: 'memory', status: memory ? 'passed' : 'failed', required: true, probeMs: 1 },
      {
        name: 'filesystem',
        kind: 'filesystem',
        status: 'failed',
        required: true,
        probeMs: 1,
        message: 'gone',
      },
    ],
    survived: { memory, filesystem: false, processes: null },
    keptContexts: [],
    markerKept: false,
    markerGone: true,
    processesRestarted: false,
  }
}

/** A sandbox whose marker directory is or is not there, recording the files written. */
function sandbox(directoryThere: boolean, written: string[], failWrite = false): SandboxHandle {
  return {
    exists: async () => directoryThere,
    writeFile: async (path: string) => {
      if (failWrite) throw new Error('disk full')
      written.push(path)
    },
  } as unknown as SandboxHandle
}

describe('reviseMarkerLoss', () => {
  it('returns a new outcome when memory was kept, and leaves the probed one as it was', async () => {
    const probed = markerGone(true)
    const before = structuredClone(probed)
    const written: string[] = []
    const revised = await reviseMarkerLoss(
      sandbox(false, written),
      manifest,
      probed,
      new AbortController().signal,
    )
    expect(probed).toEqual(before)
    expect(revised).not.toBe(probed)
    expect(revised.survived).toEqual({ memory: true, filesystem: true, processes: null })
    expect(revised.markerKept).toBe(true)
    expect(revised.checks[0]).toBe(probed.checks[0])
    expect(revised.checks[1]).toMatchObject({
      status: 'repaired',
      message: expect.stringContaining('files kept'),
    })
    expect(written).toEqual(['/home/user/.sandkeep/marker'])
  })

  it('keeps the files, marker not yet written, when the directory is there but the write fails', async () => {
    const probed = markerGone(false)
    const revised = await reviseMarkerLoss(
      sandbox(true, [], true),
      manifest,
      probed,
      new AbortController().signal,
    )
    expect(probed.survived.filesystem).toBe(false)
    expect(revised.survived.filesystem).toBe(true)
    expect(revised.markerKept).toBe(false)
    expect(revised.checks[1]).toMatchObject({
      status: 'passed',
      message: expect.stringContaining('disk full'),
    })
  })

  it('says the files are lost, in a new check, with neither piece of evidence', async () => {
    const probed = markerGone(false)
    const revised = await reviseMarkerLoss(sandbox(false, []), manifest, probed, new AbortController().signal)
    expect(probed.checks[1]?.message).toBe('gone')
    expect(revised.survived.filesystem).toBe(false)
    expect(revised.checks[1]).toMatchObject({
      status: 'failed',
      message: expect.stringContaining('taken as lost'),
    })
  })

  it('returns the probed outcome itself when the marker was not the only loss', async () => {
    const probed = { ...markerGone(true), markerGone: false }
    await expect(
      reviseMarkerLoss(sandbox(true, []), manifest, probed, new AbortController().signal),
    ).resolves.toBe(probed)
  })
})
