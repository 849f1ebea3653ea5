// The transcript format: its zod schema, the validated types, and the JSON Schema generated from it.
import { z } from 'zod'
import { parseDuration } from './args.js'

/** The tools a transcript may call: the ones `@sandkeep/ai-sdk` gives the model. */
export const TRANSCRIPT_TOOLS = ['runCode', 'runCommand', 'readFile', 'writeFile', 'listFiles'] as const

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

/** A conversation's label in a transcript: `main` is the demo's conversation, others are forks of it. */
const conversationLabel = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'expected a label of lowercase letters, digits and dashes (at most 40)')

const branchSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('regenerate') }).strict(),
  z.object({ kind: z.literal('edit'), turn: z.number().int().min(1) }).strict(),
  z.object({ kind: z.literal('switch'), toAnswerOf: z.number().int().min(1) }).strict(),
  z
    .object({
      kind: z.literal('fork'),
      from: conversationLabel.optional(),
      atTurn: z.number().int().min(0).optional(),
    })
    .strict(),
])

const turnSchema = z
  .object({
    user: z.string().min(1).max(20_000),
    conversation: conversationLabel.optional(),
    branch: branchSchema.optional(),
    idleBefore: duration.optional(),
    toolCalls: z.array(toolCallSchema).max(50).default([]),
    text: z.string().min(1).max(20_000),
  })
  .strict()

export const transcriptSchema = z
  .object({
    $schema: z.string().optional(),
    version: z.literal(1),
    title: z.string().min(1).max(200),
    description: z.string().max(2_000).optional(),
    healthChecks: z.array(healthCheckSchema).max(20).optional(),
    turns: z.array(turnSchema).min(1).max(100),
  })
  .strict()

/** A declared health check as written in a transcript (the JSON-able kinds of `@sandkeep/core`'s checks). */
export type TranscriptHealthCheck = z.output<typeof healthCheckSchema>
/** One scripted tool call. */
export type TranscriptToolCall = z.output<typeof toolCallSchema>

/**
 * A transcript turn's branch as written: a regenerate, an edit of an earlier message, a switch back to the
 * answer of an earlier transcript turn (on another branch of the same conversation), or a fork.
 */
export type TranscriptBranchInput = z.output<typeof branchSchema>

/**
 * What happens to the conversation before a turn, resolved against the turns before it: a rewind (the turn
 * regenerates the last answer, or replaces the user message of turn `toTurn + 1`) or a fork of another
 * conversation at the end of its turn `atTurn`.
 */
export type TranscriptBranch =
  | {
      kind: 'regenerate' | 'edit'
      /** The checkpoint the conversation goes back to: the turn before the one replaced. */
      toTurn: number
    }
  | {
      kind: 'switch'
      /** The transcript turn (1-based index) whose answer the conversation goes back to, as a chat's "< i/n >". */
      toAnswerOf: number
      /** That answer's turn within the conversation: the checkpoint's depth. */
      toTurn: number
    }
  | {
      kind: 'fork'
      /** The label of the conversation forked. */
      from: string
      /** Its turn whose end the fork starts from. */
      atTurn: number
    }

/** One turn, validated, with `idleBefore` turned into milliseconds. */
export interface TranscriptTurn {
  /** 1-based. */
  index: number
  /** The label of the conversation it is a turn of (`main` unless a fork's). */
  conversation: string
  /** Its number within that conversation, once any branch before it is applied (1-based). */
  chatTurn: number
  /** The rewind or fork applied before it. */
  branch?: TranscriptBranch
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
  /** True when a turn branches (a regenerate, an edit or a fork): the replay takes checkpoints. */
  branches: boolean
}

/** The label of the conversation a transcript's turns are on unless they say otherwise. */
export const MAIN_CONVERSATION = 'main'

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
