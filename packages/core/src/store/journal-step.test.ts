import { describe, expect, it } from 'vitest'
import { validateJournalStep as fromRehydrate } from '../assessment/rehydrate.js'
import {
  checkJournalStep,
  journalFilePathProblem,
  MAX_JOURNAL_STEP_BYTES,
  parseJournalEntry,
  serializeJournalEntry,
  validateJournalStep,
} from './index.js'

const refusedWith = (code: string) => expect.objectContaining({ code })

// The union of the two validators' old test sets: the store conformance kit's bad steps and the manager's
// `turn.journal.record` cases, plus the rules only one of them had (now both).
const badSteps: Array<[string, unknown]> = [
  ['null', null],
  ['no kind', {}],
  ['an array', [{ kind: 'command', command: 'ls' }]],
  ['an unknown kind', { kind: 'shell', command: 'ls' }],
  ['an empty command', { kind: 'command', command: '' }],
  ['a number as command', { kind: 'command', command: 7 }],
  ['an empty cwd', { kind: 'command', command: 'ls', cwd: '' }],
  ['an unknown language', { kind: 'code', code: 'x', language: 'ruby' }],
  ['an empty code', { kind: 'code', code: '' }],
  ['an empty path', { kind: 'file', path: '', content: 'x' }],
  ['no content', { kind: 'file', path: '/a' }],
  ['a path above home', { kind: 'file', path: '../../etc/passwd', content: 'x' }],
  ['an absolute path outside home', { kind: 'file', path: '/etc/passwd', content: 'x' }],
  ['home itself', { kind: 'file', path: '/home/user', content: 'x' }],
  ['a NUL in the path', { kind: 'file', path: 'a\0b', content: 'x' }],
  ['a NUL in a command', { kind: 'command', command: 'echo a\0b' }],
  ['a NUL in a cwd', { kind: 'command', command: 'ls', cwd: 'a\0b' }],
  ['a NUL in Python code', { kind: 'code', code: 'x = "\0"' }],
  ['a NUL in JavaScript code', { kind: 'code', code: 'x = "\0"', language: 'javascript' }],
  ['an unknown field', { kind: 'command', command: 'ls', secret: 'x' }],
  ['a lone surrogate', { kind: 'code', code: 'x = "\ud800"' }],
  ['a step over the size limit', { kind: 'file', path: 'big', content: 'x'.repeat(MAX_JOURNAL_STEP_BYTES) }],
]

describe('the journal-step validator', () => {
  it.each(badSteps)('refuses %s with INVALID_ARGUMENT', (_, step) => {
    expect(() => validateJournalStep(step)).toThrow(refusedWith('INVALID_ARGUMENT'))
    expect(() => checkJournalStep(step)).toThrow(refusedWith('INVALID_ARGUMENT'))
  })

  it('accepts the contract steps and returns a copy of their fields', () => {
    const steps = [
      { kind: 'command', command: 'pip install x', cwd: '/home/user' },
      { kind: 'code', code: 'x = 1', language: 'javascript' },
      { kind: 'file', path: 'relative/cfg', content: '' },
      { kind: 'file', path: '/home/user/../user/cfg', content: 'on' },
      // A file's content may hold any text, NUL included: it is written, not executed.
      { kind: 'file', path: 'raw.bin', content: 'a\0b' },
    ] as const
    for (const step of steps) {
      const copy = validateJournalStep(step)
      expect(copy).toEqual(step)
      expect(copy).not.toBe(step)
    }
  })

  it('is the one rehydrate.ts re-exports for the manager', () => {
    expect(fromRehydrate).toBe(validateJournalStep)
  })

  it('reads back a stored step recorded before the NUL, path and size rules', () => {
    for (const step of [
      { kind: 'file', path: '/etc/motd', content: 'x' },
      { kind: 'file', path: '/home/user/big', content: 'x'.repeat(MAX_JOURNAL_STEP_BYTES) },
      { kind: 'command', command: 'echo a\0b' },
    ] as const) {
      expect(parseJournalEntry(serializeJournalEntry(5, step), 'here')).toEqual({ recordedAt: 5, step })
    }
    expect(() => parseJournalEntry('{"recordedAt":1,"step":{"kind":"x"}}', 'here')).toThrow(
      refusedWith('STORE_CORRUPT'),
    )
  })

  it('says why a file path is refused', () => {
    expect(journalFilePathProblem('a/b')).toBeUndefined()
    expect(journalFilePathProblem('../x')).toMatch(/outside the sandbox's home/)
  })
})
