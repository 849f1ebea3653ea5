import { type ResumeReport, SandkeepError, type TurnEndReport } from '@sandkeep/core'
import {
  type Agent,
  type GenerateTextResult,
  generateText,
  type OutputInterface,
  type StreamTextResult,
  streamText,
  type ToolSet,
} from 'ai'
import {
  createSandboxSession,
  type SandboxSessionOptions,
  type SandkeepSandboxSession,
} from '../sandbox-session/index.js'
import { type SandboxTools, type SandboxToolsOptions, sandboxTools } from '../sandbox-tools.js'
import { createTurnControl } from './control.js'
import { guardStreamResult, withEndTransform } from './stream-guard.js'

type Context = NonNullable<Parameters<typeof streamText>[0]['runtimeContext']>
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never
/** `streamText` options, where `tools` are the caller's own (the sandbox tools are added to them). */
type StreamTextParameters<TOOLS extends ToolSet, OUTPUT extends OutputInterface> = DistributiveOmit<
  Parameters<typeof streamText<SandboxTools & TOOLS, Context, OUTPUT>>[0],
  'tools'
> & { tools?: TOOLS }
/** `generateText` options, where `tools` are the caller's own (the sandbox tools are added to them). */
type GenerateTextParameters<TOOLS extends ToolSet, OUTPUT extends OutputInterface> = DistributiveOmit<
  Parameters<typeof generateText<SandboxTools & TOOLS, Context, OUTPUT>>[0],
  'tools'
> & { tools?: TOOLS }
// The wrappers forward options they do not inspect; the public signatures above carry the types.
type LooseOptions = Record<string, unknown> & { abortSignal?: AbortSignal; experimental_transform?: unknown }
const callGenerateText = generateText as unknown as (options: LooseOptions) => Promise<unknown>
const callStreamText = streamText as unknown as (options: LooseOptions) => object
type LooseAgent = {
  generate(options: LooseOptions): PromiseLike<unknown>
  stream(options: LooseOptions): PromiseLike<object>
}

/** Options of {@link sandkeepTurn}: the session's, plus the tools' and a safety limit. */
export interface SandkeepTurnOptions extends SandboxSessionOptions {
  /** Options of the sandbox tools added to the call, or `false` to add none. Default `{}`. */
  tools?: Omit<SandboxToolsOptions, 'session'> | false
  /**
   * Safety net for a call nobody finishes (a stream that is neither read to the end nor cancelled): after
   * this many ms the call is aborted and the turn ended. Default 900 000 (15 min); `0` disables it.
   */
  maxDurationMs?: number
}

/**
 * One turn of a conversation around one AI SDK call. The sandbox resumes on the first tool execution and
 * is paused again when the call finishes, fails, is aborted, or its stream is cancelled.
 */
export interface SandkeepTurn extends AsyncDisposable {
  /** The turn's sandbox; the wrapped call gets it as `experimental_sandbox`. */
  readonly sandbox: SandkeepSandboxSession
  /** The sandbox tools bound to `sandbox` (empty when `tools: false`). */
  readonly tools: SandboxTools | Record<string, never>
  /** Fires when the turn ends (the wrapped call is aborted with it). */
  readonly abortSignal: AbortSignal
  /** What the resume found, once the sandbox was used. */
  readonly report: ResumeReport | undefined
  /** Resolves when the turn has ended, with what the end did (`undefined` when the sandbox was never used). */
  readonly ended: Promise<TurnEndReport | undefined>
  /** `generateText` as one turn: the sandbox tools are added and the turn ends when the call settles. */
  generateText<TOOLS extends ToolSet = {}, OUTPUT extends OutputInterface = OutputInterface<string, string>>(
    options: GenerateTextParameters<TOOLS, OUTPUT>,
  ): Promise<GenerateTextResult<SandboxTools & TOOLS, Context, OUTPUT>>
  /**
   * `streamText` as one turn: the turn ends when the stream ends or errors, when the call is aborted, and
   * when a consumer cancels any of the result's streams (the call is then aborted too).
   */
  streamText<
    TOOLS extends ToolSet = {},
    OUTPUT extends OutputInterface = OutputInterface<string, string, never>,
  >(options: StreamTextParameters<TOOLS, OUTPUT>): StreamTextResult<SandboxTools & TOOLS, Context, OUTPUT>
  /** `agent.generate` as one turn (give the agent `sandboxTools()`: they use the turn's sandbox). */
  agentGenerate<TOOLS extends ToolSet, OUTPUT extends OutputInterface>(
    agent: Agent<never, TOOLS, Context, OUTPUT>,
    options: Parameters<Agent<never, TOOLS, Context, OUTPUT>['generate']>[0],
  ): Promise<GenerateTextResult<TOOLS, Context, OUTPUT>>
  /** `agent.stream` as one turn, with the same end guarantees as `streamText`. */
  agentStream<TOOLS extends ToolSet, OUTPUT extends OutputInterface>(
    agent: Agent<never, TOOLS, Context, OUTPUT>,
    options: Parameters<Agent<never, TOOLS, Context, OUTPUT>['stream']>[0],
  ): Promise<StreamTextResult<TOOLS, Context, OUTPUT>>
  /** Ends the turn now (aborting the call if it still runs). Idempotent. */
  end(): Promise<TurnEndReport | undefined>
}

/**
 * Wraps one `generateText` / `streamText` / agent call as one sandkeep turn of `conversationId`.
 * Synchronous and free until the model first calls a tool.
 *
 * ```ts
 * const turn = sandkeepTurn({ sessions, conversationId: 'conv-42' })
 * const result = turn.streamText({ model, prompt, stopWhen: stepCountIs(5) })
 * for await (const text of result.textStream) process.stdout.write(text)
 * ```
 * @throws SandkeepError INVALID_ARGUMENT for bad ids or options, before any I/O.
 */
export function sandkeepTurn(options: SandkeepTurnOptions): SandkeepTurn {
  const sandbox = createSandboxSession(options)
  const tools = options.tools === false ? {} : sandboxTools({ ...options.tools, session: sandbox })
  const maxDurationMs = options.maxDurationMs ?? 900_000
  if (typeof maxDurationMs !== 'number' || !Number.isFinite(maxDurationMs) || maxDurationMs < 0) {
    throw new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message: `sandkeepTurn: maxDurationMs must be a number of ms >= 0, got ${String(maxDurationMs)}.`,
    })
  }
  const control = createTurnControl(sandbox, maxDurationMs)
  const end = () => control.end()
  const onCancel = () => void end().catch(() => {})
  /** The options of the wrapped call: the turn's signal and sandbox (unless the caller passed one). */
  const wrap = (name: string, callOptions: LooseOptions) => ({
    ...callOptions,
    experimental_sandbox: callOptions.experimental_sandbox ?? sandbox,
    abortSignal: control.callSignal(control.claim(name), callOptions.abortSignal),
  })
  const withTools = (callOptions: LooseOptions) => ({
    tools: { ...tools, ...(callOptions.tools as ToolSet | undefined) },
  })

  return {
    sandbox,
    tools,
    abortSignal: control.signal,
    get report() {
      return sandbox.report
    },
    ended: control.ended,
    generateText: (async (callOptions: LooseOptions) => {
      const wrapped = wrap('generateText', callOptions)
      try {
        return await callGenerateText({ ...wrapped, ...withTools(callOptions) })
      } finally {
        await end().catch(() => {})
      }
    }) as unknown as SandkeepTurn['generateText'],
    streamText: ((callOptions: LooseOptions) => {
      const wrapped = wrap('streamText', callOptions)
      const result = callStreamText({
        ...wrapped,
        ...withTools(callOptions),
        experimental_transform: withEndTransform(callOptions.experimental_transform, end),
      })
      return guardStreamResult(result, onCancel)
    }) as unknown as SandkeepTurn['streamText'],
    agentGenerate: (async (agent: LooseAgent, callOptions: LooseOptions) => {
      const wrapped = wrap('agentGenerate', callOptions)
      try {
        return await agent.generate(wrapped)
      } finally {
        await end().catch(() => {})
      }
    }) as unknown as SandkeepTurn['agentGenerate'],
    agentStream: (async (agent: LooseAgent, callOptions: LooseOptions) => {
      const wrapped = wrap('agentStream', callOptions)
      try {
        const result = await agent.stream({
          ...wrapped,
          experimental_transform: withEndTransform(callOptions.experimental_transform, end),
        })
        return guardStreamResult(result, onCancel)
      } catch (error) {
        await end().catch(() => {})
        throw error
      }
    }) as unknown as SandkeepTurn['agentStream'],
    end,
    [Symbol.asyncDispose]: async () => {
      await end()
    },
  }
}
