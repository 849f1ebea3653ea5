import { stateLostNotice as neutralNotice } from '@sandkeep/agent'
import type { ResumeReport } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { startOutcomeOf, stateLostNotice } from './notice.js'

const report = (fields: Partial<ResumeReport>): ResumeReport =>
  ({
    outcome: 'resumed',
    stateLost: false,
    rehydratedSteps: 0,
    survived: { memory: true, filesystem: true, processes: true },
    ...fields,
  }) as ResumeReport

describe('startOutcomeOf', () => {
  it('is connected only for the same sandbox back whole', () => {
    expect(startOutcomeOf(report({}))).toBe('connected')
    expect(startOutcomeOf(report({ outcome: 'reconnected' }))).toBe('connected')
    expect(
      startOutcomeOf(
        report({ stateLost: true, survived: { memory: false, filesystem: true, processes: null } }),
      ),
    ).toBe('created')
    expect(startOutcomeOf(report({ survived: { memory: null, filesystem: true, processes: false } }))).toBe(
      'created',
    )
    for (const outcome of ['created', 'recreated', 'rewound', 'forked'] as const) {
      expect(startOutcomeOf(report({ outcome }))).toBe('created')
    }
  })
})

describe('stateLostNotice', () => {
  it('says nothing when nothing was lost', () => {
    expect(stateLostNotice(undefined)).toBeUndefined()
    expect(stateLostNotice(report({}))).toBeUndefined()
  })

  it('names a new sandbox and the replayed steps', () => {
    const text = stateLostNotice(report({ outcome: 'recreated', stateLost: true, rehydratedSteps: 2 }))
    expect(text).toMatch(/replaced by a fresh one/)
    expect(text).toMatch(/2 recorded setup steps were replayed/)
  })

  it('names what a resumed sandbox lost and that files were kept', () => {
    const text = stateLostNotice(
      report({ stateLost: true, survived: { memory: false, filesystem: true, processes: false } }),
    )
    expect(text).toMatch(
      /interpreter variables and imports and running processes from earlier turns are gone/,
    )
    expect(text).toMatch(/files are still there/)
  })

  it("is @sandkeep/agent's notice, plus one for processes that died while the files survived", () => {
    const lost = report({ stateLost: true, survived: { memory: false, filesystem: true, processes: null } })
    expect(stateLostNotice(lost)).toBe(neutralNotice(lost))
    const text = stateLostNotice(report({ survived: { memory: true, filesystem: true, processes: false } }))
    expect(text).toMatch(/running processes from earlier turns did not survive/)
    expect(text).toMatch(/files are still there/)
  })
})
