import { SandkeepError } from '../errors.js'
import { writeManifest } from '../fidelity-manifest.js'
import type { TurnEndReport } from '../report.js'
import { toSandkeepError } from '../retry.js'
import type { ProcessInfo } from '../sandbox-provider.js'
import type { OnTurnEnd } from '../session-manager-types.js'
import type { SessionRecord, SessionSandboxState, TurnManifest } from '../session-store.js'
import { countLiveTurn, rememberLastTurn } from './caches.js'
import { wakeCreationWaiters } from './creation-wait.js'
import { settleSpeculation } from './speculation.js'
import type { TurnImpl } from './turn.js'

type Action = TurnEndReport['action']
/** Records a failure of the turn end: the first one goes on the end report, every one to the `error` event. */
type Fail = (phase: string, cause: unknown) => void

/** What the release told: whether it happened, whether this turn was the last holder, the record after it. */
interface Released {
  released: boolean
  last: boolean
  record: SessionRecord | null
}

/**
 * The turn end: write the manifest, release the lease, settle an unused speculation, and, as the last holder,
 * pause, keep or kill the sandbox (`onTurnEnd`). Never throws: failures are on the end report and `error`.
 */
export async function finishTurn(turn: TurnImpl): Promise<TurnEndReport> {
  const { events } = turn.ctx
  turn.stopRenewal()
  turn.detachSignal()
  // Wait for a resume in flight so its sandbox is paused too; its failure was already reported.
  if (turn.readyPromise) await turn.readyPromise.catch(() => undefined)
  turn.ended = true
  const workMs = turn.readyAt ? Date.now() - turn.readyAt : 0
  let error: { code: string; message: string } | undefined
  const fail: Fail = (phase, cause) => {
    const failure = toSandkeepError(cause)
    error ??= { code: failure.code, message: failure.message }
    turn.ctx.emitError(phase, failure, turn.key)
  }
  const handle = turn.handle
  // Nothing since the resume could change the process list: record the one it read instead of listing
  // again, on condition that no other turn (which may have started processes) ended meanwhile.
  const processesAtResume = turn.processesMayHaveChanged ? undefined : turn.processesAtResume
  const manifest = await writeTurnManifest(turn, processesAtResume, fail)
  const storeStarted = performance.now()
  const outcome = await release(turn, manifest, processesAtResume, fail)
  countLiveTurn(turn.ctx.caches, turn.key, -1)
  wakeCreationWaiters(turn.ctx.caches, turn.key)
  await settleSpeculation(turn, handle, outcome.released, outcome.last, outcome.record)
  const storeMs = performance.now() - storeStarted
  const pauseStarted = performance.now()
  const sandboxId = handle?.id ?? outcome.record?.sandboxId ?? null
  const action = await decideEnd(turn, outcome, sandboxId, fail)
  const pauseMs = performance.now() - pauseStarted
  rememberOutcome(turn, action, outcome)
  if (action !== 'none' && action !== 'left-running-for-other-holders' && sandboxId) {
    events.emit('pause-end', {
      conversationId: turn.conversationId,
      tenant: turn.tenant,
      sandboxId,
      action,
      ms: pauseMs,
    })
  }
  const endReport: TurnEndReport = {
    action,
    last: outcome.last,
    timings: { workMs, storeMs, pauseMs },
    ...(error ? { error } : {}),
  }
  turn.endReport = endReport
  turn.controller.abort(
    new SandkeepError({
      code: 'TURN_ENDED',
      message: 'The turn ended.',
      tenant: turn.tenant,
      conversationId: turn.conversationId,
    }),
  )
  events.emit('turn-end', {
    conversationId: turn.conversationId,
    tenant: turn.tenant,
    report: turn.report,
    end: endReport,
  })
  return endReport
}

/** The manifest for the next turn's probes (with fidelity probes on and a sandbox in hand). */
async function writeTurnManifest(
  turn: TurnImpl,
  processesAtResume: readonly ProcessInfo[] | undefined,
  fail: Fail,
): Promise<TurnManifest | undefined> {
  const handle = turn.handle
  if (!handle || !turn.ctx.config.fidelityProbes) return undefined
  try {
    const signal = new AbortController().signal
    return await writeManifest(
      handle,
      turn.contexts,
      turn.manifestBase,
      turn.verified,
      signal,
      processesAtResume,
    )
  } catch (cause) {
    fail('manifest', cause)
    return undefined
  }
}

/** The sandbox state the release records when this turn is the last holder. */
function stateIfLast(onTurnEnd: OnTurnEnd): SessionSandboxState {
  if (onTurnEnd === 'pause' || onTurnEnd === 'auto-pause') return 'paused'
  return onTurnEnd === 'kill' ? 'killed' : 'running'
}

/** Releases the lease, with the manifest and the accounting, in one store call. */
async function release(
  turn: TurnImpl,
  manifest: TurnManifest | undefined,
  processesAtResume: readonly ProcessInfo[] | undefined,
  fail: Fail,
): Promise<Released> {
  const { store, config } = turn.ctx
  try {
    const basis = turn.acquired.record?.turnCount
    const result = await store.release(turn.key, turn.lease, {
      ...(manifest ? { manifest } : {}),
      ...(manifest && processesAtResume && basis !== undefined ? { manifestIfTurnCount: basis } : {}),
      turnEndedAt: Date.now(),
      // The store counts overlapping turns' running time once, from the earliest start.
      ...(turn.handle && turn.runningSince ? { runningFrom: turn.runningSince } : {}),
      pausedSeconds:
        turn.resumedFromPausedAt !== null
          ? Math.max(0, turn.runningSince - turn.resumedFromPausedAt) / 1000
          : 0,
      ...(turn.handle ? { stateIfLast: stateIfLast(config.onTurnEnd) } : {}),
      ttlMs: config.ttlMs,
    })
    return { released: true, last: result.last, record: result.record }
  } catch (cause) {
    // Without the release we cannot know whether other turns hold the sandbox, so it is not paused: the
    // lease lapses and the platform timeout bounds the cost.
    fail('release', cause)
    return { released: false, last: false, record: null }
  }
}

/** The pause decision: leave it to other holders, or as the last holder act on the sandbox. */
async function decideEnd(
  turn: TurnImpl,
  outcome: Released,
  sandboxId: string | null,
  fail: Fail,
): Promise<Action> {
  const { released, last, record } = outcome
  const handle = turn.handle
  if (!released) return 'none'
  if (!last) {
    if (handle && record && record.state !== 'running') {
      // This turn resumed the sandbox but others still hold it: say it runs, so that whichever turn
      // ends last pauses it even if that turn never touched the sandbox itself.
      await recordState(turn, 'running').catch((e: unknown) => fail('set-state', e))
    }
    return record ? 'left-running-for-other-holders' : 'none'
  }
  if (sandboxId && !turn.foreign && (handle || record?.state === 'running' || turn.touched === sandboxId)) {
    return endSandbox(turn, sandboxId, turn.ctx.config.onTurnEnd, fail, !handle)
  }
  return 'none'
}

/** Remembers what this turn left, for the next turn's speculative connect and store-loss adoption. */
function rememberOutcome(turn: TurnImpl, action: Action, outcome: Released): void {
  const handle = turn.handle
  const { released, record } = outcome
  // The next turn here may connect to this sandbox while it takes its lease: only one that still exists.
  const sandboxStays =
    action === 'paused' ||
    action === 'auto-pause' ||
    action === 'kept' ||
    action === 'left-running-for-other-holders'
  // A record gone at the release (the store lost it) is still this sandbox's session: remember it, so the
  // next turn can tell the session was lost and take the sandbox over.
  const mappedHere = released && (record === null || record.sandboxId === handle?.id)
  rememberLastTurn(
    turn.ctx.caches,
    turn.key,
    sandboxStays && handle && mappedHere && !turn.foreign
      ? { sandboxId: handle.id, turnCount: record?.turnCount ?? -1, leftAs: action }
      : null,
  )
}

/** Records the sandbox state (`at`: when it took effect, epoch ms), keeping the session for `ttlMs`. */
function recordState(turn: TurnImpl, state: SessionSandboxState, at?: number): Promise<SessionRecord | null> {
  const { ttlMs } = turn.ctx.config
  return turn.ctx.store.setState(turn.key, state, at === undefined ? { ttlMs } : { at, ttlMs })
}

/** The last holder's action on the sandbox. `writeState` when `release` did not record the state. */
async function endSandbox(
  turn: TurnImpl,
  sandboxId: string,
  onTurnEnd: OnTurnEnd,
  fail: Fail,
  writeState: boolean,
): Promise<Action> {
  const { provider, config } = turn.ctx
  const call = <T>(operation: () => Promise<T>) => turn.ctx.call(operation)
  try {
    if (onTurnEnd === 'pause') {
      // false means it was already paused: the state we wanted.
      await call(() => provider.pause!(sandboxId))
      if (writeState) await recordState(turn, 'paused')
      return 'paused'
    }
    if (onTurnEnd === 'auto-pause') {
      await call(() => provider.setTimeout!(sandboxId, config.idleTimeoutMs))
      if (writeState) await recordState(turn, 'paused', Date.now() + config.idleTimeoutMs)
      return 'auto-pause'
    }
    if (onTurnEnd === 'kill') {
      await call(() => provider.kill(sandboxId))
      if (writeState) await recordState(turn, 'killed')
      return 'killed'
    }
    return 'kept'
  } catch (cause) {
    if (SandkeepError.hasCode(cause, 'SANDBOX_NOT_FOUND')) {
      // Gone already (killed elsewhere, expired): the next turn recreates it.
      await recordState(turn, 'killed').catch((e: unknown) => fail('set-state', e))
      return 'none'
    }
    fail(onTurnEnd, cause)
    // The state written with the release claimed 'paused'; correct it so the next turn knows.
    await recordState(turn, 'unknown').catch((e: unknown) => fail('set-state', e))
    return 'none'
  }
}
