import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { sandkeepTurn } from '@sandkeep/ai-sdk'
import {
  codeCheck,
  createSessionManager,
  fileCheck,
  type HealthCheck,
  type HealthRepair,
  portCheck,
  processCheck,
  type ResumeReport,
  type SandboxProvider,
  type SessionManager,
  type SessionManagerEvents,
  type SessionStore,
  type TurnEndReport,
} from '@sandkeep/core'
import { type ModelMessage, stepCountIs } from 'ai'
import {
  describeE2B,
  type E2BConnection,
  openE2BProvider,
  openStore,
  redactUrl,
  type StoreConfig,
} from '../config.js'
import { ConfigError, describeError } from '../errors.js'
import { createScriptedModel } from '../scripted-model.js'
import type { Transcript, TranscriptHealthCheck, TranscriptToolCall } from '../transcript.js'
import type { DemoRenderer, DemoSetup, FaultName, Isolation, PauseMode, TurnSummary } from './events.js'
import { type EmbeddedHost, injectFault, startEmbeddedHost } from './host.js'

/** Options of {@link runDemo}. */
export interface RunDemoOptions {
  /** The validated transcript. */
  transcript: Transcript
  /** `local`: an in-process local-e2b host; `e2b`: the E2B platform in `e2b`. */
  provider:
    | { kind: 'local'; pauseMode: PauseMode; stateDir?: string; isolation?: Isolation }
    | { kind: 'e2b'; connection: E2BConnection }
  /** The session store. */
  store: StoreConfig
  /** The fault to inject and before which turn. Only with the local host. */
  fault: { name: FaultName; turn: number } | null
  /** Real wait for every scripted idle, ms. */
  idleMs: number
  /** Conversation id. */
  conversationId: string
  /** Tenant. */
  tenant: string
  /** Leave the session (and its paused sandbox) at the end instead of ending it. */
  keepSession: boolean
  /** Run the remaining turns after a failed one. */
  keepGoing: boolean
  /** Where events go. */
  renderer: DemoRenderer
  /** Stops the replay between (or inside) turns. */
  signal: AbortSignal
}

/** What the replay found. */
export interface DemoResult {
  /** True when every turn passed. */
  ok: boolean
  /** Per-turn summary. */
  turns: TurnSummary[]
}

/** The steps the model may take in one turn: its tool calls plus the final answer, with some slack. */
const stepSlack = 2

/**
 * Replays a transcript through the real AI SDK loop: for each turn, `streamText` with the scripted model and
 * the sandkeep tools, wrapped by `sandkeepTurn` so the sandbox resumes on the first tool call and is paused
 * when the stream ends. Emits events for the renderer; never throws for a failing turn (it is reported).
 */
export async function runDemo(options: RunDemoOptions): Promise<DemoResult> {
  const { transcript, renderer } = options
  const cleanup: Array<() => Promise<void>> = []
  let host: EmbeddedHost | undefined
  let store: SessionStore | undefined
  try {
    // The store is opened and asked once before anything else starts: a REDIS_URL pointing nowhere is a
    // configuration error, reported as such, not a turn that fails halfway and blames the transcript.
    renderer.progress('connecting to the session store')
    store = await openStore(options.store)
    const openedStore = store
    cleanup.push(() => openedStore.close())
    await checkStoreReachable(store, options)

    let provider: SandboxProvider
    let providerSetup: DemoSetup['provider']
    if (options.provider.kind === 'local') {
      renderer.progress('starting the local E2B-compatible host')
      const stateDir = options.provider.stateDir ?? (await mkdtemp(join(tmpdir(), 'sandkeep-demo-')))
      if (!options.provider.stateDir) cleanup.push(() => rm(stateDir, { recursive: true, force: true }))
      host = await startEmbeddedHost({
        pauseMode: options.provider.pauseMode,
        stateDir,
        ...(options.provider.isolation ? { isolation: options.provider.isolation } : {}),
      })
      const started = host
      cleanup.push(() => started.close())
      provider = await openE2BProvider(host.connection)
      providerSetup = {
        kind: 'local-e2b',
        apiUrl: host.connection.apiUrl ?? '',
        pauseMode: options.provider.pauseMode,
        isolation: host.isolation,
      }
    } else {
      provider = await openE2BProvider(options.provider.connection)
      providerSetup = { kind: 'e2b', apiUrl: describeE2B(options.provider.connection) }
    }
    renderer.progress(null)
    renderer.emit({
      type: 'demo-start',
      transcript: { file: transcript.file, title: transcript.title, turns: transcript.turns.length },
      conversationId: options.conversationId,
      tenant: options.tenant,
      store:
        options.store.kind === 'memory'
          ? { kind: 'memory' }
          : { kind: 'redis', url: redactUrl(options.store.url), prefix: options.store.prefix },
      provider: providerSetup,
      fault: options.fault,
      idleMs: options.idleMs,
    })

    const managers = new ManagerCache(store, provider, transcript.healthChecks)
    const summaries: TurnSummary[] = []
    const messages: ModelMessage[] = []
    const model = createScriptedModel(transcript, { chunkDelayMs: 0 })
    let lastSandboxId: string | undefined
    let lastTurnEndedAt: number | undefined
    let failedTurn: number | null = null

    for (const turn of transcript.turns) {
      if (options.signal.aborted) break
      // The user is away: the sandbox sits paused. A scripted idle is shown at its scripted length but
      // waited for a short, real time, so paused time is visible without the demo taking hours.
      if (turn.idleBeforeMs > 0) {
        const waitedMs = Math.min(options.idleMs, turn.idleBeforeMs)
        renderer.progress(`idle (${Math.round(turn.idleBeforeMs / 60_000)} min scripted), sandbox paused`)
        await sleep(waitedMs, undefined, { signal: options.signal }).catch(() => {})
        if (options.signal.aborted) break
        renderer.progress(null)
        renderer.emit({ type: 'idle', turn: turn.index, scriptedMs: turn.idleBeforeMs, waitedMs })
      }
      if (options.fault && options.fault.turn === turn.index) {
        if (!host) throw new Error('faults need the embedded local host')
        renderer.progress(`injecting fault ${options.fault.name}`)
        const detail = await injectFault(host, options.fault.name, {
          sandboxId: lastSandboxId,
          serverCommands: serverCommands(transcript.healthChecks),
        })
        renderer.emit({ type: 'fault', turn: turn.index, fault: options.fault.name, detail })
      }

      const sessions = managers.forTurn(turn.index)
      const observed = observeTurn(sessions, options.conversationId)
      const turnStartedAt = Date.now()
      const pausedSeconds = lastTurnEndedAt === undefined ? 0 : (turnStartedAt - lastTurnEndedAt) / 1000
      renderer.emit({ type: 'turn-start', turn: turn.index, user: turn.user })
      renderer.progress('waiting for the model')

      let ok = true
      let error: { code?: string; message: string } | undefined
      let report: ResumeReport | undefined
      let end: TurnEndReport | undefined
      messages.push({ role: 'user', content: turn.user })
      const handle = sandkeepTurn({
        sessions,
        conversationId: options.conversationId,
        tenant: options.tenant,
        abortSignal: options.signal,
      })
      try {
        const result = handle.streamText({
          model,
          messages,
          stopWhen: stepCountIs(turn.toolCalls.length + stepSlack),
        })
        const calls = new Map<string, TranscriptToolCall | undefined>()
        let callIndex = 0
        let text = ''
        for await (const part of result.fullStream) {
          switch (part.type) {
            case 'tool-call':
              calls.set(part.toolCallId, turn.toolCalls[callIndex++])
              renderer.emit({
                type: 'tool-call',
                turn: turn.index,
                toolCallId: part.toolCallId,
                toolName: part.toolName,
                input: part.input,
              })
              renderer.progress(`running ${part.toolName} in the sandbox`)
              break
            case 'tool-result': {
              const problem = checkToolOutput(part.output, calls.get(part.toolCallId))
              if (problem) ok = false
              renderer.emit({
                type: 'tool-result',
                turn: turn.index,
                toolCallId: part.toolCallId,
                toolName: part.toolName,
                output: part.output,
                ok: problem === undefined,
                ...(problem ? { problem } : {}),
              })
              renderer.progress('waiting for the model')
              break
            }
            case 'tool-error':
              ok = false
              renderer.emit({
                type: 'tool-result',
                turn: turn.index,
                toolCallId: part.toolCallId,
                toolName: part.toolName,
                output: { error: describeError(part.error) },
                ok: false,
                problem: 'the tool threw instead of returning a result',
              })
              break
            case 'text-delta':
              text += part.text
              renderer.textDelta?.(turn.index, part.text)
              break
            case 'error':
              throw part.error
            case 'abort':
              throw options.signal.reason ?? new Error('the turn was aborted')
          }
        }
        renderer.progress('pausing the sandbox')
        end = await handle.ended
        report = handle.report
        messages.push(...(await result.response).messages)
        renderer.emit({ type: 'text', turn: turn.index, text })
      } catch (caught) {
        ok = false
        error = errorInfo(caught)
        renderer.progress('ending the turn')
        end = await handle.end().catch(() => undefined)
        report = handle.report
      } finally {
        observed.stop()
      }
      renderer.progress(null)
      report ??= observed.report
      end ??= observed.end
      if (report?.sandboxId) lastSandboxId = report.sandboxId
      if (observed.error && !error && !ok) error = observed.error
      if (options.signal.aborted && !ok) error = { message: 'interrupted' }
      const turnEndedAt = Date.now()
      lastTurnEndedAt = turnEndedAt
      const runningSeconds = (turnEndedAt - turnStartedAt) / 1000
      renderer.emit({
        type: 'turn-end',
        turn: turn.index,
        ok,
        report: report ?? null,
        end: end ?? null,
        rehydrate: observed.rehydrate,
        ...(error
          ? { error }
          : ok
            ? {}
            : { error: { message: "a tool result missed the transcript's expectation" } }),
        runningSeconds,
        pausedSeconds,
      })
      summaries.push({
        turn: turn.index,
        ok,
        outcome: report?.outcome ?? null,
        action: end?.action ?? null,
        runningSeconds,
        pausedSeconds,
        scriptedIdleSeconds: turn.idleBeforeMs / 1000,
        repairs: (report?.checks ?? [])
          .filter((check) => check.status === 'repaired')
          .map((check) => check.name),
        rehydratedSteps: report?.rehydratedSteps ?? 0,
        stateLost: report?.stateLost ?? false,
      })
      if (!ok) {
        failedTurn ??= turn.index
        if (!options.keepGoing) break
      }
    }

    if (options.signal.aborted && failedTurn === null && summaries.length < transcript.turns.length) {
      failedTurn = summaries.length + 1
    }
    if (!options.keepSession) {
      renderer.progress('ending the session (killing its sandbox)')
      await managers
        .forTurn(Number.POSITIVE_INFINITY)
        .endSession(options.conversationId, { tenant: options.tenant })
        .catch((caught: unknown) => {
          renderer.emit({ type: 'error', message: `could not end the session: ${describeError(caught)}` })
        })
    }
    renderer.progress(null)
    const ok = failedTurn === null
    renderer.emit({ type: 'summary', ok, turns: summaries, failedTurn, interrupted: options.signal.aborted })
    return { ok, turns: summaries }
  } finally {
    renderer.progress(null)
    for (const step of cleanup.reverse()) await step().catch(() => {})
  }
}

/** One read of the conversation's record; a store that cannot answer it stops the demo with a ConfigError. */
async function checkStoreReachable(store: SessionStore, options: RunDemoOptions): Promise<void> {
  try {
    await store.get({ tenant: options.tenant, conversationId: options.conversationId })
  } catch (caught) {
    if (options.store.kind !== 'redis') throw caught
    const code = (caught as { code?: unknown })?.code
    const detail = code === 'STORE_UNAVAILABLE' ? '' : ` (${describeError(caught)})`
    throw new ConfigError(
      `the session store is unreachable: Redis at ${redactUrl(options.store.url)} did not answer${detail}. Start Redis, fix REDIS_URL, or unset it to use the memory store. No turn was run.`,
    )
  }
}

/** Checks a tool result against the transcript's expectation; returns the problem or `undefined`. */
export function checkToolOutput(output: unknown, call: TranscriptToolCall | undefined): string | undefined {
  if (typeof output === 'object' && output !== null) {
    const record = output as Record<string, unknown>
    if (typeof record.error === 'string' && record.error) return `the tool reported an error`
    if (typeof record.exitCode === 'number' && record.exitCode !== 0)
      return `the command exited with ${record.exitCode}`
  }
  const wanted = call?.expect?.contains
  if (wanted === undefined) return undefined
  const haystack = typeof output === 'string' ? output : JSON.stringify(output)
  for (const needle of [wanted].flat()) {
    // Compare against the JSON text and the decoded values alike, so `"west": 4790` matches an escaped
    // stdout as well as a plain string result.
    if (!haystack.includes(needle) && !haystack.includes(JSON.stringify(needle).slice(1, -1))) {
      return `expected the output to contain ${JSON.stringify(needle)}`
    }
  }
  return undefined
}

function errorInfo(error: unknown): { code?: string; message: string } {
  const code = (error as { code?: unknown })?.code
  const message = error instanceof Error ? error.message : String(error)
  return typeof code === 'string' && /^[A-Z_]+$/.test(code) ? { code, message } : { message }
}

/** Listens to one turn's session-manager events (repairs, rehydration, reports) for the conversation. */
function observeTurn(sessions: SessionManager, conversationId: string) {
  const state: {
    report: ResumeReport | undefined
    end: TurnEndReport | undefined
    rehydrate: { steps: number; ms: number; reason: string } | null
    error: { code?: string; message: string } | undefined
    stop: () => void
  } = { report: undefined, end: undefined, rehydrate: null, error: undefined, stop: () => {} }
  const mine = (payload: { conversationId?: string }) => payload.conversationId === conversationId
  const offs = [
    sessions.on('resume-end', (payload: SessionManagerEvents['resume-end']) => {
      if (mine(payload)) state.report = payload.report
    }),
    sessions.on('turn-end', (payload: SessionManagerEvents['turn-end']) => {
      if (mine(payload)) state.end = payload.end
    }),
    sessions.on('rehydrate', (payload: SessionManagerEvents['rehydrate']) => {
      if (!mine(payload)) return
      const previous = state.rehydrate
      state.rehydrate = {
        steps: (previous?.steps ?? 0) + payload.steps,
        ms: (previous?.ms ?? 0) + payload.ms,
        reason: payload.reason,
      }
    }),
    sessions.on('error', (payload: SessionManagerEvents['error']) => {
      if (payload.conversationId === conversationId) state.error = errorInfo(payload.error)
    }),
  ]
  state.stop = () => {
    for (const off of offs) off()
  }
  return state
}

/**
 * One session manager per set of active health checks: a check declared `fromTurn: 4` (a server started in
 * turn 3) is only run from turn 4 on, so earlier turns do not report it as failing.
 */
class ManagerCache {
  readonly #managers = new Map<string, SessionManager>()
  constructor(
    readonly store: SessionStore,
    readonly provider: SandboxProvider,
    readonly checks: TranscriptHealthCheck[],
  ) {}

  forTurn(turn: number): SessionManager {
    const active = this.checks.filter((check) => (check.fromTurn ?? 1) <= turn)
    const key = active.map((check) => check.name).join('\u0000')
    let manager = this.#managers.get(key)
    if (!manager) {
      manager = createSessionManager({
        store: this.store,
        provider: this.provider,
        onTurnEnd: 'pause',
        healthChecks: active.map(toHealthCheck),
      })
      this.#managers.set(key, manager)
    }
    return manager
  }
}

/** Turns a transcript's JSON check into `@sandkeep/core`'s check value. */
export function toHealthCheck(check: TranscriptHealthCheck): HealthCheck {
  const base = {
    name: check.name,
    ...(check.timeoutMs === undefined ? {} : { timeoutMs: check.timeoutMs }),
    ...(check.required === undefined ? {} : { required: check.required }),
  }
  const repair = (value: Extract<TranscriptHealthCheck, { kind: 'port' }>['repair']) =>
    value === undefined ? {} : { repair: value as HealthRepair }
  switch (check.kind) {
    case 'process':
      return processCheck({
        ...base,
        command: check.command,
        ...(check.cwd ? { cwd: check.cwd } : {}),
        ...(check.envs ? { envs: check.envs } : {}),
      })
    case 'port':
      return portCheck({
        ...base,
        port: check.port,
        ...(check.path ? { path: check.path } : {}),
        ...repair(check.repair),
      })
    case 'code':
      return codeCheck({
        ...base,
        code: check.code,
        ...(check.language ? { language: check.language } : {}),
        ...repair(check.repair),
      })
    case 'file':
      return fileCheck({ ...base, path: check.path, ...repair(check.repair) })
  }
}

/** Commands that start the transcript's servers (from its process checks and background repairs). */
function serverCommands(checks: TranscriptHealthCheck[]): string[] {
  const commands: string[] = []
  for (const check of checks) {
    if (check.kind === 'process') commands.push(check.command)
    if ('repair' in check && check.repair && 'command' in check.repair) commands.push(check.repair.command)
  }
  return commands
}
