import {
  checkBranch,
  checkpointMetadata,
  createSandboxSession,
  createTurnControl,
  moveForBranch,
  type SandkeepMessageMetadata,
  type SandkeepTurnBranch,
} from '@sandkeep/agent'
import {
  type Checkpoint,
  mergeAbortSignals,
  type ResumeReport,
  SandkeepError,
  type TurnEndReport,
} from '@sandkeep/core'
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
  aiSession,
  type SandboxSessionOptions,
  type SandkeepSandboxSession,
} from '../sandbox-session/index.js'
import { type SandboxTools, type SandboxToolsOptions, sandboxTools } from '../sandbox-tools.js'
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
type LooseOptions = Record<string, unknown> & {
  abortSignal?: AbortSignal
  experimental_transform?: unknown
  prepareStep?: (options: unknown) => unknown
}
const callGenerateText = generateText as unknown as (options: LooseOptions) => Promise<unknown>
const callStreamText = streamText as unknown as (options: LooseOptions) => object
type LooseAgent = {
  generate(options: LooseOptions): PromiseLike<unknown>
  stream(options: LooseOptions): PromiseLike<object>
}

/** When a {@link sandkeepTurn} resumes the sandbox. */
export type SandkeepTurnResume = 'eager' | 'lazy' | 'auto'

/** Options of {@link sandkeepTurn}: the session's, plus the tools', when to resume, and a safety limit. */
export interface SandkeepTurnOptions extends SandboxSessionOptions {
  /**
   * When the sandbox resumes. `'eager'`: as the wrapped call starts, in parallel with the model's first
   * step, so the resume and its checks are done by the time the model calls a tool (a call whose model uses
   * no tool still resumes, and pauses, the sandbox). `'lazy'`: at the model's first tool call; a call that
   * uses no tool makes no store or sandbox call. `'auto'`: eager when this conversation's previous turn used
   * the sandbox (the session record says), lazy otherwise; the lease is taken as the call starts. Default
   * `'auto'`.
   */
  resume?: SandkeepTurnResume
  /**
   * `true`: `generateText` resolves, and a stream closes, only after the turn's end (the pause) is done,
   * so whoever read the result finds the sandbox paused. Default `false`: they are done right after the
   * model's last step and the end follows; `turn.ended` resolves when it is done (on a serverless host,
   * keep the function alive for it: `waitUntil(turn.ended)`).
   */
  awaitEnd?: boolean
  /** Options of the sandbox tools added to the call, or `false` to add none. Default `{}`. */
  tools?: Omit<SandboxToolsOptions, 'session'> | false
  /**
   * Safety net for a call nobody finishes (a stream that is neither read to the end nor cancelled): after
   * this many ms the call is aborted and the turn ended. Default 900 000 (15 min); `0` disables it.
   */
  maxDurationMs?: number
  /**
   * Start from another checkpoint of the conversation than its head (its current state): `{ checkpoint:
   * id }` (an id from an answer's metadata, on any branch of the conversation's tree; `null`: the root,
   * before the first turn), what {@link branchFromMessages} reads from the history a request sends; or,
   * on the head's path, `{ regenerate: true }` (the checkpoint the head's turn started from),
   * `{ editTurn: k }` (before turn k, 1-based), `{ fromTurn: n }` (the end of turn n). The head itself:
   * nothing to do. The move (`sessions.restore`, or `rewind` for the turn numbers) is done as the call
   * starts, before the turn begins, deletes nothing (every other branch stays restorable), and needs the
   * manager's `checkpoints` option. Its failure is the call's (a rejected `generateText`, an `error` part
   * of the stream) and changes nothing: CHECKPOINT_NOT_FOUND (an id the conversation does not have:
   * pruned, another conversation's or tenant's, altered), INVALID_ARGUMENT (no answer to regenerate, no
   * turn to edit), SESSION_BUSY (a turn of the conversation is running). A bad shape or a malformed id is
   * refused by `sandkeepTurn` itself.
   */
  branch?: SandkeepTurnBranch
}

/** A `messageMetadata` callback of `toUIMessageStream` (and the Response helpers), as far as sandkeep uses it. */
export type MessageMetadataCallback<METADATA> = (options: { part: { type: string } }) => METADATA | undefined

/**
 * One turn of a conversation around one AI SDK call. The sandbox resumes on the first tool execution (or,
 * with `resume: 'eager'`, as the call starts) and is paused again once the call finishes, fails, is
 * aborted, or its stream is cancelled.
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
  /**
   * Resolves when the turn has ended (the sandbox paused, kept or killed), with what the end did
   * (`undefined` when the sandbox was never used). Unless `awaitEnd`, this is after the wrapped call's
   * result: a serverless host keeps the function alive for it (`waitUntil(turn.ended)`).
   */
  readonly ended: Promise<TurnEndReport | undefined>
  /**
   * The checkpoint at the turn's end (with the manager's `checkpoints` option), once the end's release
   * recorded it (by the stream's finish with `messageMetadata()`, else once `ended` resolved);
   * keep it with the assistant message (`messageMetadata()` does, for a UI message stream).
   */
  readonly checkpoint: Checkpoint | undefined
  /**
   * A `messageMetadata` callback for `toUIMessageStream`, `toUIMessageStreamResponse` or
   * `pipeUIMessageStreamToResponse` of this turn's `streamText`/`agentStream` result: the finish chunk
   * carries `{ sandkeep: { checkpoint, parentCheckpoint, turn, ... } }` ({@link SandkeepMessageMetadata}), merged over what `own`
   * returns (`own` gives the metadata of every other part). Calling it makes the stream's finish wait for
   * the turn end's release, where the checkpoint is recorded (after its snapshot; the pause follows the
   * finish); call it before the stream is read, as passing it does.
   */
  messageMetadata<METADATA extends object = Record<never, never>>(
    own?: MessageMetadataCallback<METADATA>,
  ): MessageMetadataCallback<METADATA | (METADATA & { sandkeep: SandkeepMessageMetadata })>
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
 * @throws SandkeepError INVALID_ARGUMENT for bad ids or options (`branch` included), before any I/O.
 */
export function sandkeepTurn(options: SandkeepTurnOptions): SandkeepTurn {
  const { resume, awaitEnd, maxDurationMs, branch } = checkTurnOptions(options)
  let branched: Promise<unknown> | undefined
  /** The branch's move, once: started by the call, or by a sandbox call before it, whichever is first. */
  const rewind = () => {
    if (!branch) return Promise.resolve()
    branched ??= moveForBranch(
      options.sessions,
      sandbox.conversationId,
      sandbox.tenant,
      branch,
      mergeAbortSignals(control.signal, options.abortSignal),
    )
    return branched
  }
  // The session checks the ids and options (before any I/O); the branch's move runs before its turn begins.
  const sandbox = aiSession(
    createSandboxSession({
      ...options,
      beforeBegin: branch ? async () => void (await rewind()) : undefined,
    }),
  )
  const tools = options.tools === false ? {} : sandboxTools({ ...options.tools, session: sandbox })
  const control = createTurnControl(sandbox, maxDurationMs)
  const end = () => control.end()
  let metadataWanted = false
  /** The checkpoint the turn's release recorded, known before the pause that follows it. */
  let released: Checkpoint | undefined
  /**
   * Holds the stream's finish, when it is to carry the checkpoint, until the turn end's release recorded it
   * (the snapshot is taken by then; the pause is not waited for).
   */
  const beforeFinish = () => {
    if (!metadataWanted) return undefined
    const ending = control.end(undefined, { abortCall: false })
    const turn = sandbox.turn
    if (!turn) return ending
    return Promise.race([turn.checkpointed, ending.then(() => turn.checkpointed)]).then((checkpoint) => {
      released = checkpoint
    })
  }
  const onCancel = () => void end().catch(() => {})
  /** Ends the turn once the call is over: awaited with `awaitEnd`, otherwise left to run (see `ended`). */
  const finish = async () => {
    const ending = end().catch(() => undefined)
    if (awaitEnd) await ending
  }
  /** The options of the wrapped call: the turn's signal and sandbox (unless the caller passed one). */
  const wrap = (name: string, callOptions: LooseOptions) => {
    const signal = control.callSignal(control.claim(name), callOptions.abortSignal)
    // The resume runs while the model thinks; its failure reaches the first tool call that needs it.
    if (resume !== 'lazy') sandbox.prewarm(resume === 'eager' ? true : 'auto')
    return {
      ...callOptions,
      experimental_sandbox: callOptions.experimental_sandbox ?? sandbox,
      abortSignal: signal,
    }
  }
  const withTools = (callOptions: LooseOptions) => ({
    tools: { ...tools, ...(callOptions.tools as ToolSet | undefined) },
  })
  /** The caller's prepareStep, after the branch's rewind: a stream's model waits for it, and fails with it. */
  const withRewind = (callOptions: LooseOptions) =>
    branch
      ? {
          prepareStep: async (stepOptions: unknown) => {
            await rewind()
            return callOptions.prepareStep?.(stepOptions)
          },
        }
      : {}

  return {
    sandbox,
    tools,
    abortSignal: control.signal,
    get report() {
      return sandbox.report
    },
    ended: control.ended,
    get checkpoint() {
      return released ?? control.endReport?.checkpoint
    },
    messageMetadata: ((own?: MessageMetadataCallback<object>) => {
      metadataWanted = true
      return ({ part }: { part: { type: string } }) => {
        const mine = own?.({ part })
        const checkpoint = released ?? control.endReport?.checkpoint
        if (part.type !== 'finish' || !checkpoint) return mine
        return { ...mine, ...checkpointMetadata(checkpoint) }
      }
    }) as SandkeepTurn['messageMetadata'],
    generateText: (async (callOptions: LooseOptions) => {
      const wrapped = wrap('generateText', callOptions)
      try {
        await rewind()
        return await callGenerateText({ ...wrapped, ...withTools(callOptions) })
      } finally {
        await finish()
      }
    }) as unknown as SandkeepTurn['generateText'],
    streamText: ((callOptions: LooseOptions) => {
      const wrapped = wrap('streamText', callOptions)
      const result = callStreamText({
        ...wrapped,
        ...withTools(callOptions),
        ...withRewind(callOptions),
        experimental_transform: withEndTransform(callOptions.experimental_transform, finish, beforeFinish),
      })
      return guardStreamResult(result, onCancel)
    }) as unknown as SandkeepTurn['streamText'],
    agentGenerate: (async (agent: LooseAgent, callOptions: LooseOptions) => {
      const wrapped = wrap('agentGenerate', callOptions)
      try {
        await rewind()
        return await agent.generate(wrapped)
      } finally {
        await finish()
      }
    }) as unknown as SandkeepTurn['agentGenerate'],
    agentStream: (async (agent: LooseAgent, callOptions: LooseOptions) => {
      const wrapped = wrap('agentStream', callOptions)
      try {
        await rewind()
        const result = await agent.stream({
          ...wrapped,
          experimental_transform: withEndTransform(callOptions.experimental_transform, finish, beforeFinish),
        })
        return guardStreamResult(result, onCancel)
      } catch (error) {
        await finish()
        throw error
      }
    }) as unknown as SandkeepTurn['agentStream'],
    end,
    [Symbol.asyncDispose]: async () => {
      await end()
    },
  }
}

const RESUME_MODES: readonly SandkeepTurnResume[] = ['eager', 'lazy', 'auto']

/** The turn's own options, checked before any I/O, with their defaults. */
function checkTurnOptions(options: SandkeepTurnOptions): {
  resume: SandkeepTurnResume
  awaitEnd: boolean
  maxDurationMs: number
  branch: SandkeepTurnBranch | undefined
} {
  const invalid = (message: string) => new SandkeepError({ code: 'INVALID_ARGUMENT', message })
  if (typeof options !== 'object' || options === null) {
    throw invalid('sandkeepTurn needs an options object: { sessions, conversationId, tenant? }.')
  }
  const { resume = 'auto', awaitEnd = false, maxDurationMs = 900_000 } = options
  if (!RESUME_MODES.includes(resume)) {
    throw invalid(`sandkeepTurn: resume must be 'eager', 'lazy' or 'auto', got ${String(resume)}.`)
  }
  if (typeof awaitEnd !== 'boolean') {
    throw invalid(`sandkeepTurn: awaitEnd must be true or false, got ${String(awaitEnd)}.`)
  }
  if (typeof maxDurationMs !== 'number' || !Number.isFinite(maxDurationMs) || maxDurationMs < 0) {
    throw invalid(`sandkeepTurn: maxDurationMs must be a number of ms >= 0, got ${String(maxDurationMs)}.`)
  }
  return { resume, awaitEnd, maxDurationMs, branch: checkBranch(options.branch) }
}
