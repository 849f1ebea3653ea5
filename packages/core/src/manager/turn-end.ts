import { writeManifest } from '../assessment/fidelity-manifest.js'
import { SandkeepError } from '../contract/errors.js'
import type { TurnEndReport } from '../contract/report.js'
import { toSandkeepError } from '../contract/retry.js'
import type { ProcessInfo, SandboxHandle } from '../contract/sandbox-provider.js'
import type { OnTurnEnd } from '../contract/session-manager-types.js'
import type {
  Checkpoint,
  SessionRecord,
  SessionSandboxState,
  TurnManifest,
} from '../contract/session-store.js'
import { sessionAttributes } from '../telemetry/tracer.js'
import {
  deleteReleasedSnapshots,
  snapshotCheckpoint,
  type TakenCheckpoint,
  unchangedCheckpoint,
} from './checkpoints.js'
import type { TurnScope } from './scope.js'
import type { TurnEntries } from './turn-ledger.js'

type Action = TurnEndReport['action']
/** Records a failure of the turn end: the first one goes on the end report, every one to the `error` event. */
type Fail = (phase: string, cause: unknown) => void

/** What the turn end takes: what the turn's ledger holds, and what the lease and the turn's start left. */
export interface TurnEndInput extends TurnEntries {
  /** The turn count on the record the lease returned (a manifest built on the resume's list is conditional on it). */
  acquiredTurnCount: number | undefined
  /** Called once, right after the release (before the pause), with the checkpoint it recorded. */
  onReleased: (checkpoint: Checkpoint | undefined) => void
}

/** What the release told: whether it happened, whether this turn was the last holder, the record after it. */
interface Released {
  released: boolean
  last: boolean
  record: SessionRecord | null
  /** The release kept the lease as the session's hold: no other turn begins until `releaseHold`. */
  held: boolean
  /** The checkpoint recorded with the release. */
  checkpoint?: Checkpoint
  /** The store refused the checkpoint (a rewind came after this turn began, or the mapping changed). */
  checkpointRefused?: boolean
  /** Checkpoints pruned past `keep`. */
  prunedCheckpoints?: Checkpoint[]
}

/** What the release writes besides the accounting. */
interface ReleaseWrites {
  manifest: TurnManifest | undefined
  processesAtResume: readonly ProcessInfo[] | undefined
  checkpoint: TakenCheckpoint | undefined
}

/**
 * The turn end, while the lease is still renewed: write the manifest, release the lease, and, as the last
 * holder, pause, keep or kill the sandbox (`onTurnEnd`). The last holder's
 * release holds the session until that is done, so that a turn begun meanwhile (by this process or another)
 * waits instead of meeting a sandbox that is being paused. Never throws: failures are on the end report and
 * `error`. The turn emits `turn-end` with the report returned.
 */
export async function finishTurn(scope: TurnScope, input: TurnEndInput): Promise<TurnEndReport> {
  const ended = scope.ctx.state.markEnding(scope.key)
  try {
    return await endTurn(scope, input)
  } finally {
    // A no-op when the release already said; otherwise (it was never reached) there is no checkpoint.
    input.onReleased(undefined)
    ended()
  }
}

async function endTurn(scope: TurnScope, input: TurnEndInput): Promise<TurnEndReport> {
  const { ctx, key } = scope
  const { assessed } = input
  const handle = assessed?.handle
  const workMs = assessed?.readyAt ? performance.now() - assessed.readyAt : 0
  let error: { code: string; message: string } | undefined
  const fail: Fail = (phase, cause) => {
    const failure = toSandkeepError(cause)
    error ??= { code: failure.code, message: failure.message }
    ctx.emitError(phase, failure, key)
  }
  // Nothing since the resume could change the process list: record the one it read instead of listing
  // again, on condition that no other turn (which may have started processes) ended meanwhile.
  const processesAtResume = input.processesMayHaveChanged ? undefined : input.processesAtResume
  const manifest = await writeTurnManifest(
    scope,
    input,
    { signal: new AbortController().signal, processes: processesAtResume },
    fail,
  )
  const taken = ctx.config.checkpoints
    ? await ctx.telemetry.tracer.phase(
        'sandkeep.checkpoint',
        sessionAttributes(key),
        async () => takeCheckpoint(scope, input, fail),
        checkpointAttributes,
      )
    : undefined
  const storeStarted = performance.now()
  const outcome = await release(scope, input, { manifest, processesAtResume, checkpoint: taken }, fail)
  input.onReleased(outcome.checkpoint)
  // Marked before any other await, so a turn of this process begun from now on waits for the pause.
  const letGo = outcome.held ? ctx.state.holdEnd(key) : undefined
  ctx.state.turnEnded(key)
  ctx.state.wakeCreationWaiters(key)
  const storeMs = performance.now() - storeStarted
  const pauseStarted = performance.now()
  const sandboxId = handle?.id ?? outcome.record?.sandboxId ?? null
  const { touched } = input
  const action = await decideEnd(scope, { handle, foreign: input.foreign, touched }, outcome, sandboxId, fail)
  const pauseMs = performance.now() - pauseStarted
  rememberOutcome(scope, handle, input.foreign, action, outcome)
  await input.abandoned
  if (letGo) {
    await ctx.store.releaseHold!(key, scope.lease()).catch((cause: unknown) => fail('release-hold', cause))
    letGo()
  }
  await dropReleasedSnapshots(scope, taken, outcome)
  if (action !== 'none' && action !== 'left-running-for-other-holders' && sandboxId) {
    ctx.events.emit('pause-end', {
      conversationId: key.conversationId,
      tenant: key.tenant,
      sandboxId,
      action,
      ms: pauseMs,
    })
  }
  return {
    action,
    last: outcome.last,
    timings: { workMs, storeMs, pauseMs, ...(taken ? { checkpointMs: taken.ms } : {}) },
    ...(outcome.checkpoint ? { checkpoint: outcome.checkpoint } : {}),
    ...(outcome.checkpoint && taken?.journalOnly ? { journalOnly: taken.journalOnly } : {}),
    ...(error ? { error } : {}),
  }
}

/** What the checkpoint span says of the checkpoint taken (nothing of a turn that took none). */
function checkpointAttributes(taken: TakenCheckpoint | undefined): Record<string, string | number | boolean> {
  if (!taken) return { 'sandkeep.checkpoint.taken': false }
  return {
    'sandkeep.checkpoint.taken': true,
    'sandkeep.sandbox.id': taken.input.sandboxId,
    'sandkeep.checkpoint.snapshot': taken.input.snapshot !== null,
    'sandkeep.checkpoint.fresh': taken.fresh,
  }
}

/**
 * The checkpoint of this turn's end (with the `checkpoints` option): a snapshot of the sandbox in hand, or,
 * for a turn that never had it, the previous checkpoint's. Never for another tenant's sandbox.
 */
function takeCheckpoint(
  scope: TurnScope,
  input: TurnEndInput,
  fail: Fail,
): Promise<TakenCheckpoint | undefined> | undefined {
  const { ctx, key } = scope
  if (!ctx.config.checkpoints || input.foreign) return undefined
  const handle = input.assessed?.handle
  if (handle) return snapshotCheckpoint(ctx, key, handle, scope.storeNow(), fail)
  return unchangedCheckpoint(ctx, key, input.acquiredTurnCount, fail)
}

/** Deletes the snapshots the release let go: pruned past `keep`, or this turn's own when it was not recorded. */
async function dropReleasedSnapshots(
  scope: TurnScope,
  taken: TakenCheckpoint | undefined,
  outcome: Released,
): Promise<void> {
  const unrecorded = taken?.fresh && (!outcome.released || outcome.checkpointRefused) ? [taken.input] : []
  const released = [...(outcome.prunedCheckpoints ?? []), ...unrecorded]
  if (released.length > 0) await deleteReleasedSnapshots(scope.ctx, scope.key, released)
}

/**
 * The manifest for the next probes of the sandbox (with fidelity probes on and a sandbox in hand), from what
 * the turn noted: written by the turn end, and by a mid-turn checkpoint for the sandbox as it is at the call.
 * `handle` defaults to the assessed one; `processes` is a process list still known to be current. A failure
 * goes to `fail` (phase `manifest`) and gives `undefined`.
 */
export async function writeTurnManifest(
  scope: TurnScope,
  noted: Pick<TurnEntries, 'assessed' | 'contexts' | 'verified' | 'written'>,
  at: { handle?: SandboxHandle; signal: AbortSignal; processes?: readonly ProcessInfo[] | undefined },
  fail: Fail,
): Promise<TurnManifest | undefined> {
  const { assessed } = noted
  if (!assessed || !scope.ctx.config.fidelityProbes) return undefined
  try {
    return await writeManifest(
      at.handle ?? assessed.handle,
      noted.contexts,
      assessed.manifestBase,
      noted.verified,
      at.signal,
      at.processes,
      noted.written,
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
  scope: TurnScope,
  input: TurnEndInput,
  writes: ReleaseWrites,
  fail: Fail,
): Promise<Released> {
  const { manifest, processesAtResume, checkpoint } = writes
  const { ctx, key } = scope
  const { store, config } = ctx
  const inHand = input.assessed !== undefined
  const basis = input.acquiredTurnCount
  // Held only by a turn that will act on a sandbox it resumed (or tried to) as the last holder. A failed
  // releaseHold leaves the hold to lapse with the lease, which the turn then stops renewing.
  const hold =
    (inHand || input.touched !== null) &&
    !input.foreign &&
    config.onTurnEnd !== 'keep' &&
    typeof store.releaseHold === 'function'
  try {
    const result = await store.release(key, scope.lease(), {
      ...(manifest ? { manifest } : {}),
      ...(manifest && processesAtResume && basis !== undefined ? { manifestIfTurnCount: basis } : {}),
      turnEndedAt: scope.storeNow(),
      // The store counts overlapping turns' running time once, from the earliest start.
      ...(inHand && input.runningSince ? { runningFrom: input.runningSince } : {}),
      pausedSeconds:
        input.resumedFromPausedAt !== null
          ? Math.max(0, input.runningSince - input.resumedFromPausedAt) / 1000
          : 0,
      ...(inHand ? { stateIfLast: stateIfLast(config.onTurnEnd) } : {}),
      usedSandbox: input.used,
      ...(hold ? { holdIfLast: true } : {}),
      ...(checkpoint ? { checkpoint: checkpoint.input } : {}),
      ttlMs: config.ttlMs,
    })
    return {
      released: true,
      last: result.last,
      record: result.record,
      held: result.held === true,
      ...(result.checkpoint ? { checkpoint: result.checkpoint } : {}),
      ...(result.checkpointRefused ? { checkpointRefused: true } : {}),
      ...(result.prunedCheckpoints?.length ? { prunedCheckpoints: result.prunedCheckpoints } : {}),
    }
  } catch (cause) {
    // Without the release we cannot know whether other turns hold the sandbox, so it is not paused: the
    // lease lapses and the platform timeout bounds the cost.
    fail('release', cause)
    return { released: false, last: false, record: null, held: false }
  }
}

/** What the pause decision needs to know of the turn. */
interface EndingTurn {
  handle: SandboxHandle | undefined
  foreign: boolean
  touched: string | null
}

/** The pause decision: leave it to other holders, or as the last holder act on the sandbox. */
async function decideEnd(
  scope: TurnScope,
  turn: EndingTurn,
  outcome: Released,
  sandboxId: string | null,
  fail: Fail,
): Promise<Action> {
  const { released, last, record } = outcome
  const { handle } = turn
  if (!released) return 'none'
  if (!last) {
    if (handle && record && record.state !== 'running') {
      // This turn resumed the sandbox but others still hold it: say it runs, so that whichever turn
      // ends last pauses it even if that turn never touched the sandbox itself.
      await recordState(scope, 'running').catch((e: unknown) => fail('set-state', e))
    }
    return record ? 'left-running-for-other-holders' : 'none'
  }
  if (sandboxId && !turn.foreign && (handle || record?.state === 'running' || turn.touched === sandboxId)) {
    return endSandbox(scope, sandboxId, scope.ctx.config.onTurnEnd, fail, !handle)
  }
  return 'none'
}

/** Remembers what this turn left, for the next turn's tenant check and store-loss adoption. */
function rememberOutcome(
  scope: TurnScope,
  handle: SandboxHandle | undefined,
  foreign: boolean,
  action: Action,
  outcome: Released,
): void {
  const { released, record } = outcome
  // The next turn here adopts this sandbox if the store lost the session: only one that still exists.
  const sandboxStays =
    action === 'paused' ||
    action === 'auto-pause' ||
    action === 'kept' ||
    action === 'left-running-for-other-holders'
  // A record gone at the release (the store lost it) is still this sandbox's session: remember it, so the
  // next turn can tell the session was lost and take the sandbox over.
  const mappedHere = released && (record === null || record.sandboxId === handle?.id)
  scope.ctx.state.rememberLastTurn(
    scope.key,
    sandboxStays && handle && mappedHere && !foreign
      ? { sandboxId: handle.id, turnCount: record?.turnCount ?? -1, leftAs: action }
      : null,
  )
}

/** Records the sandbox state (`at`: when it took effect, epoch ms), keeping the session for `ttlMs`. */
function recordState(
  scope: TurnScope,
  state: SessionSandboxState,
  at?: number,
): Promise<SessionRecord | null> {
  const { ctx, key } = scope
  const { ttlMs } = ctx.config
  return ctx.store.setState(key, state, at === undefined ? { ttlMs } : { at, ttlMs })
}

/** The last holder's action on the sandbox. `writeState` when `release` did not record the state. */
async function endSandbox(
  scope: TurnScope,
  sandboxId: string,
  onTurnEnd: OnTurnEnd,
  fail: Fail,
  writeState: boolean,
): Promise<Action> {
  const { ctx } = scope
  const { provider, config } = ctx
  const call = <T>(operation: () => Promise<T>) => ctx.call(operation)
  try {
    if (onTurnEnd === 'pause') {
      // false means it was already paused: the state we wanted.
      await call(() => provider.pause!(sandboxId))
      if (writeState) await recordState(scope, 'paused')
      return 'paused'
    }
    if (onTurnEnd === 'auto-pause') {
      await call(() => provider.setTimeout!(sandboxId, config.idleTimeoutMs))
      if (writeState) await recordState(scope, 'paused', scope.storeNow() + config.idleTimeoutMs)
      return 'auto-pause'
    }
    if (onTurnEnd === 'kill') {
      await call(() => provider.kill(sandboxId))
      if (writeState) await recordState(scope, 'killed')
      return 'killed'
    }
    return 'kept'
  } catch (cause) {
    if (SandkeepError.hasCode(cause, 'SANDBOX_NOT_FOUND')) {
      // Gone already (killed elsewhere, expired): the next turn recreates it.
      await recordState(scope, 'killed').catch((e: unknown) => fail('set-state', e))
      return 'none'
    }
    fail(onTurnEnd, cause)
    // The state written with the release claimed 'paused'; correct it so the next turn knows.
    await recordState(scope, 'unknown').catch((e: unknown) => fail('set-state', e))
    return 'none'
  }
}
