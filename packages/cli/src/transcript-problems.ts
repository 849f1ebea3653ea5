// Problems found in a transcript, in plain words: the error, one line per problem, zod issues reworded.
import type { z } from 'zod'
import type { Transcript } from './transcript-schema.js'

/** A transcript that cannot be used; `message` names the file, the turn and the field. */
export class TranscriptError extends Error {
  override readonly name = 'TranscriptError'
  /** The transcript file. */
  readonly file: string
  /** Every problem found, one line each. */
  readonly problems: string[]
  constructor(file: string, problems: string[]) {
    super(problems.join('\n'))
    this.file = file
    this.problems = problems
  }
}

/** One problem line of a turn: file, turn, JSON path of the field, plain message. */
export function turnProblemLine(
  transcript: Transcript,
  turn: number,
  field: string,
  message: string,
): string {
  return `${transcript.file}: turn ${turn}, field ${field}: ${message}`
}

/**
 * A zod issue in plain words: what was expected and what was found, instead of zod's terse text ("Invalid
 * input"). `value` is the value at the issue's path.
 */
export function plainIssueMessage(issue: z.core.$ZodIssue, value: unknown): string {
  switch (issue.code) {
    case 'unrecognized_keys': {
      const keys = issue.keys.map((key) => JSON.stringify(key)).join(', ')
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${keys}`
    }
    case 'invalid_type':
      return value === undefined
        ? `missing (expected ${issue.expected})`
        : `expected ${issue.expected}, got ${describeValue(value)}`
    case 'invalid_value':
      return `expected one of ${issue.values.map((entry) => JSON.stringify(entry)).join(', ')}, got ${JSON.stringify(value) ?? 'nothing'}`
    case 'invalid_union':
      return `${describeValue(value)} matches none of the allowed forms`
    case 'too_small':
      return issue.origin === 'string'
        ? issue.minimum === 1
          ? 'must not be empty'
          : `must be at least ${issue.minimum} characters`
        : issue.origin === 'array'
          ? `needs at least ${issue.minimum} entr${issue.minimum === 1 ? 'y' : 'ies'}`
          : `must be at least ${issue.minimum}`
    case 'too_big':
      return issue.origin === 'string'
        ? `must be at most ${issue.maximum} characters`
        : issue.origin === 'array'
          ? `allows at most ${issue.maximum} entries`
          : `must be at most ${issue.maximum}`
    default:
      return issue.message
  }
}

function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`
  if (typeof value === 'object') return 'an object'
  return `${typeof value} ${String(value)}`
}

/** A JSON path (`toolCalls[0].input.code`) from a zod path. */
export function formatPath(path: PropertyKey[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out ? `.${String(part)}` : String(part)
  }
  return out
}

/** The value at `path` in `data`, or `undefined`. */
export function valueAt(data: unknown, path: PropertyKey[]): unknown {
  let value = data
  for (const part of path) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<PropertyKey, unknown>)[part]
  }
  return value
}

export function describeIssue(label: string, issue: z.core.$ZodIssue, data: unknown): string {
  const path = issue.path
  let where = ''
  let rest: PropertyKey[] = path
  if (path[0] === 'turns' && typeof path[1] === 'number') {
    where = `turn ${path[1] + 1}`
    rest = path.slice(2)
  } else if (path[0] === 'healthChecks' && typeof path[1] === 'number') {
    where = `healthChecks[${path[1]}]`
    rest = path.slice(2)
  }
  let field = formatPath(rest)
  const message = issue.code === 'custom' ? issue.message : plainIssueMessage(issue, valueAt(data, path))
  if (!field && where === '' && path.length === 0) field = ''
  const location = [where, field ? `field ${field}` : ''].filter(Boolean).join(', ')
  return `${label}: ${location ? `${location}: ` : ''}${message}`
}

export function jsonErrorPosition(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const position = /position (\d+)/.exec(message)
  if (!position) return message
  const offset = Number(position[1])
  const before = text.slice(0, offset)
  const line = before.split('\n').length
  const column = offset - before.lastIndexOf('\n')
  return `line ${line}, column ${column}: ${message.replace(/ in JSON at position.*$/, '').replace(/^Unexpected/, 'unexpected')}`
}
