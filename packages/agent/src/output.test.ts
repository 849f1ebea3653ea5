import type { ResumeReport } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { sliceLines, splitLines, stateLostNotice, truncateOutput } from './output.js'

describe('truncateOutput', () => {
  it('leaves short text alone', () => {
    expect(truncateOutput('hello', 10)).toEqual({ text: 'hello', omittedChars: 0 })
    expect(truncateOutput('x'.repeat(10), 10).omittedChars).toBe(0)
  })

  it('keeps the head and the tail and says how much was cut', () => {
    const text = `${'a'.repeat(600)}${'m'.repeat(9_000)}${'z'.repeat(400)}`
    const { text: cut, omittedChars } = truncateOutput(text, 1_000)
    expect(omittedChars).toBe(9_000)
    expect(cut.startsWith('a'.repeat(600))).toBe(true)
    expect(cut.endsWith('z'.repeat(400))).toBe(true)
    expect(cut).not.toContain('mm')
    expect(cut).toContain('9,000 characters omitted')
    expect(cut).toContain('the output was 10,000 characters')
  })

  it('never splits a surrogate pair', () => {
    const text = '😀'.repeat(100)
    const { text: cut } = truncateOutput(text, 11)
    expect(cut.isWellFormed()).toBe(true)
  })
})

const base: ResumeReport = {
  conversationId: 'c',
  tenant: 'default',
  sandboxId: 's',
  outcome: 'resumed',
  timings: { storeMs: 0, connectMs: 0, healthMs: 0, rehydrateMs: 0, totalMs: 0 },
  survived: { memory: true, filesystem: true, processes: true },
  checks: [],
  stateLost: false,
  retries: 0,
  rehydratedSteps: 0,
}

describe('stateLostNotice', () => {
  it('says nothing when nothing was lost', () => {
    expect(stateLostNotice(undefined)).toBeUndefined()
    expect(stateLostNotice(base)).toBeUndefined()
  })

  it('names memory loss and keeps files', () => {
    const notice = stateLostNotice({
      ...base,
      stateLost: true,
      survived: { memory: false, filesystem: true, processes: false },
    })
    expect(notice).toMatch(/interpreter variables/)
    expect(notice).toMatch(/running processes/)
    expect(notice).toMatch(/files are still there/)
  })

  it('--pause-mode processes: a resumed sandbox that lost memory and files is not called replaced', () => {
    const notice = stateLostNotice({
      ...base,
      stateLost: true,
      rehydratedSteps: 4,
      survived: { memory: false, filesystem: false, processes: true },
    })
    expect(notice).not.toMatch(/replaced/)
    expect(notice).toMatch(/was resumed/)
    expect(notice).toMatch(/files and installed packages, interpreter variables from earlier turns are gone/)
    expect(notice).toMatch(/Background processes were restarted/)
    expect(notice).toMatch(/4 recorded setup steps were replayed/)
  })

  it('names the files a replay kept as the sandbox had them', () => {
    const notice = stateLostNotice({
      ...base,
      stateLost: true,
      rehydratedSteps: 1,
      keptFiles: ['report.md', 'a', 'b', 'c', 'd', 'e'],
      survived: { memory: true, filesystem: false, processes: null },
    })
    expect(notice).toMatch(/kept as they are rather than replaced: report\.md, a, b, c, d and 1 more\./)
  })

  it('names a recreated sandbox and replayed steps', () => {
    const notice = stateLostNotice({ ...base, outcome: 'recreated', stateLost: true, rehydratedSteps: 2 })
    expect(notice).toMatch(/replaced by a fresh one/)
    expect(notice).toMatch(/2 recorded setup steps were replayed/)
  })

  it('names the recorded steps that failed at replay, so the model does not rely on them', () => {
    const notice = stateLostNotice({
      ...base,
      outcome: 'recreated',
      stateLost: true,
      rehydratedSteps: 999,
      rehydrateFailures: {
        count: 1,
        skipped: 0,
        steps: [{ step: 1, kind: 'command', message: 'exit 1: pip: no such package' }],
      },
    })
    expect(notice).toMatch(/999 recorded setup steps were replayed/)
    expect(notice).toMatch(/1 recorded setup step failed when replayed, so what it set up is missing/)
    expect(notice).toMatch(/step 1 \(command: exit 1: pip: no such package\)/)
  })
})

describe('stateLostNotice after a rewind or a fork', () => {
  const restoredBase: ResumeReport = {
    ...base,
    sandboxId: 's2',
    outcome: 'rewound',
    survived: { memory: false, filesystem: true, processes: false },
    stateLost: true,
    rehydratedSteps: 2,
    restored: { kind: 'rewound', turn: 3, source: 'snapshot', snapshotId: 'snap-1' },
  }

  it('from a snapshot: set back to the end of turn k, files as then, memory rebuilt from the journal', () => {
    const notice = stateLostNotice(restoredBase)
    expect(notice).toMatch(/rewound: the sandbox was set back to its state at the end of turn 3/)
    // A rewind or restore deletes nothing: the model is told the other branch is still there.
    expect(notice).toMatch(/that branch is kept and can be restored/)
    expect(notice).not.toMatch(/later turns did in it is gone/)
    expect(notice).toMatch(/Files and installed packages are as they were then \(restored from a snapshot\)/)
    expect(notice).toMatch(/Interpreter variables were rebuilt by re-running 2 recorded setup steps/)
    expect(notice).toMatch(/Background processes from then are not running/)
    expect(notice).not.toMatch(/replaying/)
  })

  it('is given even when the report says nothing was lost (a snapshot that kept memory)', () => {
    const notice = stateLostNotice({
      ...restoredBase,
      stateLost: false,
      rehydratedSteps: 0,
      survived: { memory: true, filesystem: true, processes: true },
    })
    expect(notice).toMatch(/end of turn 3/)
    expect(notice).not.toMatch(/Interpreter variables/)
  })

  it('from the journal: a fresh sandbox with the recorded setup replayed', () => {
    const notice = stateLostNotice({
      ...restoredBase,
      survived: { memory: false, filesystem: false, processes: false },
      restored: { kind: 'rewound', turn: 2, source: 'journal' },
    })
    expect(notice).toMatch(/end of turn 2/)
    expect(notice).toMatch(/fresh sandbox set up by replaying the 2 recorded setup steps up to then/)
    expect(notice).not.toMatch(/snapshot/)
  })

  it('a lost snapshot: what the journal did not record is gone', () => {
    const notice = stateLostNotice({
      ...restoredBase,
      restored: { kind: 'rewound', turn: 3, source: 'journal', snapshotId: 'snap-1', snapshotLost: true },
    })
    expect(notice).toMatch(/snapshot of that state was gone/)
    expect(notice).toMatch(/not recorded as setup are gone/)
  })

  it('turn 0: the start of the conversation, nothing in the sandbox', () => {
    const notice = stateLostNotice({
      ...restoredBase,
      rehydratedSteps: 0,
      restored: { kind: 'rewound', turn: 0, source: 'journal' },
    })
    expect(notice).toMatch(/start of the conversation, before its first turn/)
    expect(notice).toMatch(/fresh sandbox with nothing from earlier turns/)
  })

  it('a fork: starts from the other conversation’s state, with the failed replay steps named', () => {
    const notice = stateLostNotice({
      ...restoredBase,
      outcome: 'forked',
      restored: { kind: 'forked', turn: 1, source: 'snapshot', fromConversationId: 'conv-src-77' },
      rehydrateFailures: { count: 1, skipped: 0, steps: [{ step: 1, kind: 'code', message: 'NameError' }] },
    })
    expect(notice).toMatch(
      /forked from another one: its sandbox starts from that conversation's state at the end of turn 1/,
    )
    expect(notice).toMatch(/1 recorded setup step failed when replayed.*NameError/)
    expect(notice).not.toMatch(/conv-src-77/)
  })
})

describe('line ranges', () => {
  it('splits keeping terminators and slices 1-based inclusive ranges', () => {
    expect(splitLines('')).toEqual([])
    expect(splitLines('a\r\nb\nc')).toEqual(['a\r\n', 'b\n', 'c'])
    expect(sliceLines('a\nb\nc\n', 2, 2)).toBe('b\n')
    expect(sliceLines('a\nb\nc\n', 2)).toBe('b\nc\n')
    expect(sliceLines('a\nb', 1, 50)).toBe('a\nb')
    expect(sliceLines('a\nb', 5, 6)).toBe('')
    expect(sliceLines('a\nb', 2, 1)).toBe('')
  })
})
