// The one journal-step validator: `turn.journal.record`, the manager's bootstrap steps and both stores'
// `appendJournal` refuse exactly the same steps (it was two validators with different rules).
import { posix } from 'node:path'
import type { JournalEntry, JournalStep } from '../contract/journal.js'
import { invalidArgument, rejectUnknownOptions } from '../contract/validation.js'
import { corruptRecordError } from './errors.js'
import { MAX_JOURNAL_STEP_BYTES, utf8Bytes } from './limits.js'
import { isPlainObject } from './shape.js'

/** The sandbox's home: file steps write under it, and a relative path is taken from it. */
const SANDBOX_HOME = '/home/user'

/** The fields of each step kind. */
const STEP_FIELDS = {
  command: ['kind', 'command', 'cwd'],
  code: ['kind', 'code', 'language'],
  file: ['kind', 'path', 'content'],
} as const

/**
 * Why a file step's path may not be journaled, or undefined when it may: it must name a file under the
 * sandbox's home once `..` is resolved (`../../etc/passwd` would fail every replay, and every step after it).
 */
export function journalFilePathProblem(path: string): string | undefined {
  if (path.includes('\0')) return 'contains a NUL character'
  const resolved = posix.resolve(SANDBOX_HOME, path)
  if (!resolved.startsWith(`${SANDBOX_HOME}/`)) {
    return `resolves to ${JSON.stringify(resolved)}, outside the sandbox's home ${SANDBOX_HOME}`
  }
  return undefined
}

/**
 * Why a NUL may not be in a step's text, by field: a step that holds one can be stored, but never replayed
 * (the replay would fail at it every time).
 */
const NUL_REASONS: Readonly<Record<string, string>> = {
  command: 'a command line cannot carry one to the shell',
  cwd: 'a directory name cannot hold one',
  code: 'Python refuses source that holds one (and JavaScript steps follow the same rule)',
}

/**
 * A step's text field: a string (non-empty unless `allowEmpty`) of well-formed UTF-16, without a NUL where
 * the replay could not pass one on (`stored` steps keep what they hold: they must still parse).
 */
function stepText(name: string, value: unknown, allowEmpty = false, stored = false): string {
  if (typeof value !== 'string' || (!allowEmpty && value.length === 0)) {
    throw invalidArgument(`journal step ${name}`, `must be a${allowEmpty ? '' : ' non-empty'} string.`)
  }
  if (value.isWellFormed && !value.isWellFormed()) {
    throw invalidArgument(`journal step ${name}`, 'contains a lone UTF-16 surrogate.')
  }
  const nulReason = NUL_REASONS[name]
  if (!stored && nulReason !== undefined && value.includes('\0')) {
    throw invalidArgument(
      `journal step ${name}`,
      `contains a NUL character, which could never be replayed: ${nulReason}. Remove it, or write the data with a file step.`,
    )
  }
  return value
}

function copyStep(step: Record<string, unknown>, stored: boolean): JournalStep {
  switch (step.kind) {
    case 'command': {
      const copy: JournalStep = { kind: 'command', command: stepText('command', step.command, false, stored) }
      if (step.cwd !== undefined) copy.cwd = stepText('cwd', step.cwd, false, stored)
      return copy
    }
    case 'code': {
      const copy: JournalStep = { kind: 'code', code: stepText('code', step.code, false, stored) }
      if (step.language !== undefined) {
        if (step.language !== 'python' && step.language !== 'javascript') {
          throw invalidArgument('journal step language', 'must be "python" or "javascript".')
        }
        copy.language = step.language
      }
      return copy
    }
    default: {
      const path = stepText('path', step.path)
      const problem = stored ? undefined : journalFilePathProblem(path)
      if (problem) throw invalidArgument(`journal file step path ${JSON.stringify(path)}`, `${problem}.`)
      return { kind: 'file', path, content: stepText('content', step.content, true) }
    }
  }
}

/**
 * Checks a journal step and returns a copy holding only the contract's fields: a known kind, no unknown
 * field, non-empty well-formed text (a file's content may be empty), no NUL in a command, cwd or code (a
 * replay could never pass it on), a known language, a file path under the sandbox's home, at most
 * {@link MAX_JOURNAL_STEP_BYTES} of JSON: nothing is journaled that is bound to fail every replay. `stored`:
 * the step was read back from a store, where one recorded before the NUL, path and size rules existed must
 * still parse (its replay then reports it as a failed step).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkJournalStep(step: unknown, stored = false): JournalStep {
  if (!isPlainObject(step)) throw invalidArgument('journal step', 'must be an object with a "kind".')
  const kind = step.kind
  if (kind !== 'command' && kind !== 'code' && kind !== 'file') {
    throw invalidArgument(
      'journal step kind',
      `must be "command", "code" or "file", got ${JSON.stringify(kind) ?? 'undefined'}.`,
    )
  }
  rejectUnknownOptions(`journal ${kind} step`, step, STEP_FIELDS[kind])
  const copy = copyStep(step, stored)
  const bytes = stored ? 0 : utf8Bytes(JSON.stringify(copy))
  if (bytes > MAX_JOURNAL_STEP_BYTES) {
    throw invalidArgument(
      'journal step',
      `is ${bytes} bytes; the limit is ${MAX_JOURNAL_STEP_BYTES}. Record a command that fetches it instead.`,
    )
  }
  return copy
}

/**
 * Checks a journal step before it is recorded (what `turn.journal.record` and bootstrap steps use):
 * {@link checkJournalStep} for a new step.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateJournalStep(step: unknown): JournalStep {
  return checkJournalStep(step)
}

/** The stored form of a journal entry; both stores count journal bytes on exactly this text. */
export function serializeJournalEntry(recordedAt: number, step: JournalStep): string {
  return `{"recordedAt":${recordedAt},"step":${JSON.stringify(step)}}`
}

/**
 * Parses a stored journal entry.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function parseJournalEntry(text: string, where: string): JournalEntry {
  try {
    const value: unknown = JSON.parse(text)
    if (isPlainObject(value) && typeof value.recordedAt === 'number' && Number.isFinite(value.recordedAt)) {
      return { recordedAt: value.recordedAt, step: checkJournalStep(value.step, true) }
    }
  } catch (error) {
    throw corruptRecordError(where, 'a journal entry does not parse', undefined, error)
  }
  throw corruptRecordError(where, 'a journal entry does not parse')
}
