import { readdirSync, statSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import { parseDuration } from './args.js'

/** The tools a transcript may call: the ones `@sandkeep/ai-sdk` gives the model. */
export const TRANSCRIPT_TOOLS = ['runCode', 'runCommand', 'readFile', 'writeFile', 'listFiles'] as const

/** Name of a sandbox tool. */
export type TranscriptToolName = (typeof TRANSCRIPT_TOOLS)[number]

const duration = z.union([
  z
    .number()
    .int()
    .min(0)
    .max(30 * 86_400_000),
  z.string().refine((text) => parseDuration(text) !== undefined, {
    message: 'expected a duration like "90s", "45m" or "2h", or a number of milliseconds',
  }),
])

const toolCallSchema = z
  .object({
    tool: z.enum(TRANSCRIPT_TOOLS),
    input: z.record(z.string(), z.unknown()),
    expect: z
      .object({
        contains: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
      })
      .strict()
      .optional(),
  })
  .strict()

const repairSchema = z.union([
  z
    .object({
      command: z.string().min(1),
      cwd: z.string().min(1).optional(),
      background: z.boolean().optional(),
    })
    .strict(),
  z.object({ code: z.string().min(1), language: z.enum(['python', 'javascript']).optional() }).strict(),
])

const checkBase = {
  name: z.string().min(1).max(100),
  fromTurn: z.number().int().min(1).optional(),
  timeoutMs: z.number().int().min(1).max(600_000).optional(),
  required: z.boolean().optional(),
}

const healthCheckSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('process'),
      ...checkBase,
      command: z.string().min(1),
      cwd: z.string().min(1).optional(),
      envs: z.record(z.string(), z.string()).optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('port'),
      ...checkBase,
      port: z.number().int().min(1).max(65_535),
      path: z.string().startsWith('/').optional(),
      repair: repairSchema.optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('code'),
      ...checkBase,
      code: z.string().min(1),
      language: z.enum(['python', 'javascript']).optional(),
      repair: repairSchema.optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('file'),
      ...checkBase,
      path: z.string().startsWith('/'),
      repair: repairSchema.optional(),
    })
    .strict(),
])

const turnSchema = z
  .object({
    user: z.string().min(1).max(20_000),
    idleBefore: duration.optional(),
    toolCalls: z.array(toolCallSchema).max(50).default([]),
    text: z.string().min(1).max(20_000),
  })
  .strict()

const transcriptSchema = z
  .object({
    $schema: z.string().optional(),
    version: z.literal(1),
    title: z.string().min(1).max(200),
    description: z.string().max(2_000).optional(),
    healthChecks: z.array(healthCheckSchema).max(20).optional(),
    turns: z.array(turnSchema).min(1).max(100),
  })
  .strict()

/** A transcript as written in its JSON file. */
export type TranscriptInput = z.input<typeof transcriptSchema>
/** A declared health check as written in a transcript (the JSON-able kinds of `@sandkeep/core`'s checks). */
export type TranscriptHealthCheck = z.output<typeof healthCheckSchema>
/** One scripted tool call. */
export type TranscriptToolCall = z.output<typeof toolCallSchema>

/** One turn, validated, with `idleBefore` turned into milliseconds. */
export interface TranscriptTurn {
  /** 1-based. */
  index: number
  /** The user's message. */
  user: string
  /** How long the user was away before this turn, ms (0 when not scripted). */
  idleBeforeMs: number
  /** The model's tool calls, in order; each is one step of the agent loop. */
  toolCalls: TranscriptToolCall[]
  /** The model's final answer. */
  text: string
}

/** A validated transcript. */
export interface Transcript {
  /** Where it was read from. */
  file: string
  /** Title shown at the start of the demo. */
  title: string
  /** Optional description. */
  description?: string
  /** Declared probes the session manager runs after every resume. */
  healthChecks: TranscriptHealthCheck[]
  /** The turns, in order. */
  turns: TranscriptTurn[]
}

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

/** Directory of the transcripts shipped with the CLI (`packages/cli/transcripts`). */
export const transcriptsDir = fileURLToPath(new URL('../transcripts/', import.meta.url))

/** The transcript `sandkeep demo` replays when none is given. */
export const defaultTranscriptPath = resolve(transcriptsDir, 'data-analysis.json')

/**
 * Resolves `--transcript`. A path (with a `/`) is taken as it is. A bare name is looked for in `cwd` as
 * written, then with `.json`, then among the shipped transcripts (`data-analysis`), in that order.
 * @throws TranscriptError naming every place tried when a bare name is found nowhere.
 */
export function resolveTranscriptPath(value: string | undefined, cwd: string = process.cwd()): string {
  if (value === undefined) return defaultTranscriptPath
  if (value.includes('/') || value.includes('\\')) return resolve(cwd, value)
  const tried = [resolve(cwd, value)]
  if (!value.endsWith('.json')) tried.push(resolve(cwd, `${value}.json`))
  tried.push(resolve(transcriptsDir, value.endsWith('.json') ? value : `${value}.json`))
  const found = tried.find((path) => isFile(path))
  if (found) return found
  const shipped = shippedTranscripts()
  throw new TranscriptError(value, [
    `no transcript named ${JSON.stringify(value)}; tried ${tried.join(', ')}`,
    `shipped transcripts: ${shipped.length ? shipped.join(', ') : 'none'}`,
  ])
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** Names of the transcripts shipped with the CLI. */
export function shippedTranscripts(): string[] {
  try {
    return readdirSync(transcriptsDir)
      .filter((name) => name.endsWith('.json'))
      .map((name) => name.slice(0, -'.json'.length))
      .sort()
  } catch {
    return []
  }
}

/** The transcript format as a zod schema (`transcript.schema.json` is generated from it). */
export const TRANSCRIPT_SCHEMA = transcriptSchema

/** The JSON Schema of the transcript format, as shipped in `transcript.schema.json`. */
export function transcriptJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(transcriptSchema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >
  return {
    $schema: schema.$schema,
    title: 'sandkeep demo transcript',
    description:
      "A scripted chat for `sandkeep demo`: each turn's user message, the model's tool calls (with optional expectations) and its final answer. Generated from the CLI's zod schema.",
    ...Object.fromEntries(Object.entries(schema).filter(([key]) => key !== '$schema')),
  }
}

const maxTranscriptBytes = 2 * 1024 * 1024

/** Reads and validates a transcript file. @throws TranscriptError */
export async function loadTranscript(path: string): Promise<Transcript> {
  const label = displayPath(path)
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    const code = (error as { code?: string }).code
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : String(code ?? error)
    throw new TranscriptError(label, [`${label}: cannot read the transcript (${reason})`])
  }
  if (Buffer.byteLength(text) > maxTranscriptBytes) {
    throw new TranscriptError(label, [`${label}: the transcript is larger than 2 MiB`])
  }
  return parseTranscript(text, label)
}

/** Validates transcript text; `label` names it in errors. @throws TranscriptError */
export function parseTranscript(text: string, label: string): Transcript {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (error) {
    throw new TranscriptError(label, [`${label}: not valid JSON (${jsonErrorPosition(text, error)})`])
  }
  const result = transcriptSchema.safeParse(data)
  if (!result.success) {
    const problems = result.error.issues.slice(0, 8).map((issue) => describeIssue(label, issue, data))
    if (result.error.issues.length > 8)
      problems.push(`${label}: … and ${result.error.issues.length - 8} more problems`)
    throw new TranscriptError(label, problems)
  }
  const names = new Set<string>()
  for (const [index, check] of (result.data.healthChecks ?? []).entries()) {
    if (names.has(check.name)) {
      throw new TranscriptError(label, [
        `${label}: healthChecks[${index}], field name: "${check.name}" is used by an earlier check; names must be unique`,
      ])
    }
    names.add(check.name)
  }
  return {
    file: label,
    title: result.data.title,
    ...(result.data.description === undefined ? {} : { description: result.data.description }),
    healthChecks: result.data.healthChecks ?? [],
    turns: result.data.turns.map((turn, index) => ({
      index: index + 1,
      user: turn.user,
      idleBeforeMs:
        turn.idleBefore === undefined
          ? 0
          : typeof turn.idleBefore === 'number'
            ? turn.idleBefore
            : (parseDuration(turn.idleBefore) ?? 0),
      toolCalls: turn.toolCalls,
      text: turn.text,
    })),
  }
}

/** A problem found in a turn after parsing (e.g. a tool input the tool's schema refuses). */
export function turnProblem(
  transcript: Transcript,
  turn: number,
  field: string,
  message: string,
): TranscriptError {
  return new TranscriptError(transcript.file, [turnProblemLine(transcript, turn, field, message)])
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

function describeIssue(label: string, issue: z.core.$ZodIssue, data: unknown): string {
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

function jsonErrorPosition(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const position = /position (\d+)/.exec(message)
  if (!position) return message
  const offset = Number(position[1])
  const before = text.slice(0, offset)
  const line = before.split('\n').length
  const column = offset - before.lastIndexOf('\n')
  return `line ${line}, column ${column}: ${message.replace(/ in JSON at position.*$/, '').replace(/^Unexpected/, 'unexpected')}`
}

function displayPath(path: string): string {
  const relative = path.startsWith(`${process.cwd()}/`) ? path.slice(process.cwd().length + 1) : path
  return relative.startsWith(transcriptsDir) ? basename(relative) : relative
}
