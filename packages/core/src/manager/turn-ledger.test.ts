import { describe, expect, it } from 'vitest'
import { contentDigest } from '../assessment/file-digests.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import type { Assessed } from './assess.js'
import type { ResumeAttempt } from './resume-attempt.js'
import { TurnLedger } from './turn-ledger.js'

describe('TurnLedger', () => {
  it('reads as an empty turn before anything is noted', () => {
    expect(new TurnLedger().read()).toEqual({
      assessed: undefined,
      touched: null,
      runningSince: 0,
      resumedFromPausedAt: null,
      foreign: false,
      contexts: [],
      written: [],
      verified: { contexts: [], marker: false },
      processesAtResume: undefined,
      abandoned: undefined,
      processesMayHaveChanged: false,
      used: false,
    })
  })

  it('notes each context once, in the order code first ran in it', () => {
    const ledger = new TurnLedger()
    ledger.noteContexts([{ language: 'python', contextId: null }])
    ledger.noteContext({ language: 'javascript', contextId: null })
    ledger.noteContext({ language: 'python', contextId: null })
    ledger.noteContext({ language: 'python', contextId: 'ctx-1' })
    expect(ledger.read().contexts).toEqual([
      { language: 'python', contextId: null },
      { language: 'javascript', contextId: null },
      { language: 'python', contextId: 'ctx-1' },
    ])
  })

  it('keeps the latest write of each file as its witness, newest last, and none for an emptied file', () => {
    const ledger = new TurnLedger()
    ledger.noteWrite('/a.txt', 'one')
    ledger.noteWrite('/b.txt', 'two')
    ledger.noteWrite('/a.txt', 'three')
    ledger.noteWrite('/c.txt', 'four')
    ledger.noteWrite('/c.txt', '')
    expect(ledger.read().written).toEqual([
      { path: '/b.txt', sha256: contentDigest('two') },
      { path: '/a.txt', sha256: contentDigest('three') },
    ])
  })

  it("reads the resume's results and the handle's use, as a copy that later notes leave alone", () => {
    const ledger = new TurnLedger()
    const attempt = {
      touched: 'sb-1',
      resumedFromPausedAt: 1_000,
      abandoned: () => Promise.resolve(),
    } as unknown as ResumeAttempt
    const handle = { id: 'sb-1' } as SandboxHandle
    const assessed = { handle } as Assessed
    ledger.resumeBegan(attempt)
    ledger.sandboxRunning(2_000)
    ledger.climbed(handle)
    ledger.assessedAs(assessed)
    ledger.noteProbed({ contexts: [], marker: true }, [])
    ledger.noteUse()
    ledger.noteProcessChange()
    ledger.metForeignSandbox()
    const read = ledger.read()
    expect(ledger.handle).toBe(handle)
    expect(ledger.assessed).toBe(assessed)
    expect(read).toMatchObject({
      assessed,
      touched: 'sb-1',
      runningSince: 2_000,
      resumedFromPausedAt: 1_000,
      foreign: true,
      verified: { contexts: [], marker: true },
      processesAtResume: [],
      processesMayHaveChanged: true,
      used: true,
    })
    expect(read.abandoned).toBeInstanceOf(Promise)
    ledger.noteWrite('/late.txt', 'x')
    ledger.noteContext({ language: 'python', contextId: null })
    expect(read.written).toEqual([])
    expect(read.contexts).toEqual([])
  })
})
