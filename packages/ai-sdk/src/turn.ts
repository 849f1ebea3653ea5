import { type ResumeReport, SandkeepError, type TurnEndReport } from '@sandkeep/core'
import {
  type Agent,
  type GenerateTextResult,
  generateText,
  type OutputInterface,
  type StreamTextResult,
  type StreamTextTransform,
  streamText,
  type ToolSet,
} from 'ai'
import {
  createSandboxSession,
  type SandboxSessionOptions,
  type SandkeepSandboxSession,
} from './sandbox-session.js'
import { type SandboxTools, type SandboxToolsOptions, sandboxTools } from './sandbox-tools.js'

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

// Properties of a stream result that hand out a consumer stream, and methods that return one.
const streamGetters = new Set<PropertyKey>([
  'textStream',
  'fullStream',
  'partialOutputStream',
  'experimental_partialOutputStream',
  'elementStream',
])
const streamMethods = new Set<PropertyKey>(['toUIMessageStream'])
const responseMethods = new Set<PropertyKey>(['toUIMessageStreamResponse', 'toTextStreamResponse'])

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

  // Aborts the wrapped call when the turn ends early (cancel, safety limit) or the caller aborts.
  const callController = new AbortController()
  let resolveEnded!: (report: TurnEndReport | undefined) => void
  let rejectEnded!: (error: unknown) => void
  const ended = new Promise<TurnEndReport | undefined>((resolve, reject) => {
    resolveEnded = resolve
    rejectEnded = reject
  })
  ended.catch(() => {})
  let endPromise: Promise<TurnEndReport | undefined> | undefined
  let timer: NodeJS.Timeout | undefined
  let used = false

  function end(reason?: unknown): Promise<TurnEndReport | undefined> {
    if (endPromise) return endPromise
    clearTimeout(timer)
    if (!callController.signal.aborted) {
      callController.abort(
        reason ??
          new SandkeepError({
            code: 'TURN_ENDED',
            message: 'The sandkeep turn ended.',
            tenant: sandbox.tenant,
          }),
      )
    }
    endPromise = sandbox.end()
    endPromise.then(resolveEnded, rejectEnded)
    return endPromise
  }

  function claim(name: string): AbortSignal {
    if (used) {
      throw new SandkeepError({
        code: 'INVALID_ARGUMENT',
        message: `sandkeepTurn wraps one call; ${name} was called again. Make a new sandkeepTurn for the next turn.`,
        conversationId: sandbox.conversationId,
        tenant: sandbox.tenant,
      })
    }
    used = true
    if (maxDurationMs > 0) {
      timer = setTimeout(
        () =>
          void end(
            new SandkeepError({
              code: 'TIMEOUT',
              message: `The call ran longer than maxDurationMs (${maxDurationMs} ms); the turn was ended.`,
            }),
          ).catch(() => {}),
        maxDurationMs,
      )
      timer.unref()
    }
    return callController.signal
  }

  function callSignal(signal: AbortSignal, callerSignal: AbortSignal | undefined | null): AbortSignal {
    if (!callerSignal) return signal
    // The caller's abort ends the turn even when no one pulls the stream any more.
    const onCallerAbort = () => void end(callerSignal.reason).catch(() => {})
    if (callerSignal.aborted) onCallerAbort()
    else {
      callerSignal.addEventListener('abort', onCallerAbort, { once: true })
      // A long-lived caller signal (one per server, say) must not keep a listener per turn.
      ended.finally(() => callerSignal.removeEventListener('abort', onCallerAbort)).catch(() => {})
    }
    return AbortSignal.any([signal, callerSignal])
  }

  /** A transform at the end of the stream pipeline: its flush runs when the call's stream has ended. */
  const endTransform: StreamTextTransform<ToolSet> = () =>
    new TransformStream({
      transform(chunk, controller) {
        controller.enqueue(chunk)
      },
      async flush() {
        // Await so a consumer that reads to the end finds the sandbox already paused.
        await end().catch(() => {})
      },
      async cancel() {
        await end().catch(() => {})
      },
    })

  function withTransform(transform: unknown): unknown[] {
    const list = transform === undefined ? [] : Array.isArray(transform) ? transform : [transform]
    return [...list, endTransform]
  }

  function guardStreamResult<R extends object>(result: R): R {
    const onCancel = () => void end().catch(() => {})
    return new Proxy(result, {
      get(target, property, receiver) {
        // Getters run with the proxy as `this`, so internal stream use is guarded too.
        const value = Reflect.get(target, property, receiver)
        if (streamGetters.has(property) && value instanceof ReadableStream)
          return guardStream(value, onCancel)
        if (typeof value !== 'function') return value
        if (streamMethods.has(property)) {
          return (...args: unknown[]) => guardStream(value.apply(receiver, args) as ReadableStream, onCancel)
        }
        if (responseMethods.has(property)) {
          return (...args: unknown[]) => guardResponse(value.apply(receiver, args) as Response, onCancel)
        }
        return value.bind(receiver)
      },
    })
  }

  const turn: SandkeepTurn = {
    sandbox,
    tools,
    abortSignal: callController.signal,
    get report() {
      return sandbox.report
    },
    ended,
    generateText: (async (callOptions: LooseOptions) => {
      const signal = callSignal(claim('generateText'), callOptions.abortSignal)
      try {
        return await callGenerateText({
          ...callOptions,
          tools: { ...tools, ...(callOptions.tools as ToolSet | undefined) },
          experimental_sandbox: callOptions.experimental_sandbox ?? sandbox,
          abortSignal: signal,
        })
      } finally {
        await end().catch(() => {})
      }
    }) as unknown as SandkeepTurn['generateText'],
    streamText: ((callOptions: LooseOptions) => {
      const signal = callSignal(claim('streamText'), callOptions.abortSignal)
      const result = callStreamText({
        ...callOptions,
        tools: { ...tools, ...(callOptions.tools as ToolSet | undefined) },
        experimental_sandbox: callOptions.experimental_sandbox ?? sandbox,
        abortSignal: signal,
        experimental_transform: withTransform(callOptions.experimental_transform),
      })
      return guardStreamResult(result)
    }) as unknown as SandkeepTurn['streamText'],
    agentGenerate: (async (agent: LooseAgent, callOptions: LooseOptions) => {
      const signal = callSignal(claim('agentGenerate'), callOptions.abortSignal)
      try {
        return await agent.generate({
          ...callOptions,
          experimental_sandbox: callOptions.experimental_sandbox ?? sandbox,
          abortSignal: signal,
        })
      } finally {
        await end().catch(() => {})
      }
    }) as unknown as SandkeepTurn['agentGenerate'],
    agentStream: (async (agent: LooseAgent, callOptions: LooseOptions) => {
      const signal = callSignal(claim('agentStream'), callOptions.abortSignal)
      try {
        const result = await agent.stream({
          ...callOptions,
          experimental_sandbox: callOptions.experimental_sandbox ?? sandbox,
          abortSignal: signal,
          experimental_transform: withTransform(callOptions.experimental_transform),
        })
        return guardStreamResult(result)
      } catch (error) {
        await end().catch(() => {})
        throw error
      }
    }) as unknown as SandkeepTurn['agentStream'],
    end: () => end(),
    [Symbol.asyncDispose]: async () => {
      await end()
    },
  }
  return turn
}

/** A pass-through stream that reports its consumer's cancel; keeps async iteration. */
function guardStream<T>(inner: ReadableStream<T>, onCancel: () => void): ReadableStream<T> {
  const reader = inner.getReader()
  return new ReadableStream<T>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read()
          if (done) controller.close()
          else controller.enqueue(value)
        } catch (error) {
          controller.error(error)
        }
      },
      async cancel(reason) {
        onCancel()
        await reader.cancel(reason).catch(() => {})
      },
    },
    { highWaterMark: 0 },
  )
}

function guardResponse(response: Response, onCancel: () => void): Response {
  if (response.body === null) return response
  return new Response(guardStream(response.body, onCancel), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
}
