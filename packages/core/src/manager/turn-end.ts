import { SandkeepError } from '../errors.js'
import type { UsedContext } from '../fidelity.js'
import { writeManifest } from '../fidelity-manifest.js'
import type { TurnEndReport } from '../report.js'
import { toSandkeepError } from '../retry.js'
import type { ProcessInfo, SandboxHandle } from '../sandbox-provider.js'
import type { OnTurnEnd } from '../session-manager-types.js'
import type {
  Checkpoint,
  FileWitness,
  SessionRecord,
  SessionSandboxState,
  TurnManifest,
} from '../session-store.js'
import { sessionAttributes } from '../telemetry/tracer.js'
import type { Assessed } from './assess.js'
import { countLiveTurn, rememberLastTurn } from './caches.js'
import {
  deleteReleasedSnapshots,
  snapshotCheckpoint,
  type TakenCheckpoint,
  unchangedCheckpoint,
} from './checkpoints.js'
import { wakeCreationWaiters } from './creation-wait.js'
import { holdEnd, markEnding } from './end-wait.js'
import type { TurnScope } from './scope.js'
import { type Speculation, settleSpeculation } from './speculation.js'

type Action = TurnEndReport['action']
/** Records a failure of the turn end: the first one goes on the end report, every one to the `error` event. */
type Fail = (phase: string, cause: unknown) => void

/** What the turn end takes: what the lease, the resume and the turn's use of the sandbox left. */
export interface TurnEndInput {
  /** The turn count on the record the lease returned (a manifest built on the resume's list is conditional on it). */
  acquiredTurnCount: number | undefined
  /** What the assessment left; undefined when no resume got a sandbox (a lazy turn unused, a failed ladder). */
  assessed: Assessed | undefined
  /** The sandbox the resume asked the provider for, even if it failed (it may be running); null for none. */
  touched: string | null
  /**
   * When the resume started the sandbox running (its create or connect call), epoch ms on the store's clock;
   * 0 without a resume.
   */
  runningSince: number
  /** When the pause the resume ended began, epoch ms (the record's `pausedAt`); null when it ended none. */
  resumedFromPausedAt: number | null
  /** The resume met another tenant's sandbox: the end never touches it. */
  foreign: boolean
  /** The speculative connect begun with the lease; the end settles it unless the resume took it. */
  speculation: Speculation | undefined
  /** Interpreter contexts the turn ran code in (the assessment's first), for the manifest's sentinels. */
  contexts: readonly UsedContext[]
  /** Files the turn wrote, oldest first, for the manifest's file witnesses. */
  written: readonly FileWitness[]
  /**
   * Settles once every sandbox the resume stopped waiting for (an abort during its creation) is killed; the
   * end waits for it, so that an ended turn leaves no sandbox it asked for running unmapped.
   */
  abandoned: Promise<void> | undefined
  /** A call since the resume may have changed the process list (a start, kill, command or the SDK object). */
  processesMayHaveChanged: boolean
  /** The caller ran something in the sandbox: the record's `lastTurnUsedSandbox`. */
  used: boolean
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
 * The turn end, while the lease is still renewed: write the manifest, release the lease, settle an unused
 * speculation, and, as the last holder, pause, keep or kill the sandbox (`onTurnEnd`). The last holder's
 * release holds the session until that is done, so that a turn begun meanwhile (by this process or another)
 * waits instead of meeting a sandbox that is being paused. Never throws: failures are on the end report and
 * `error`. The turn emits `turn-end` with the report returned.
 */
export async function finishTurn(scope: TurnScope, input: TurnEndInput): Promise<TurnEndReport> {
  const ended = markEnding(scope.ctx.caches, scope.key)
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
  const processesAtResume = input.processesMayHaveChanged ? undefined : assessed?.processesAtResume
  const manifest = await writeTurnManifest(scope, input, processesAtResume, fail)
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
  const letGo = outcome.held ? holdEnd(ctx.caches, key) : undefined
  countLiveTurn(ctx.caches, key, -1)
  wakeCreationWaiters(ctx.caches, key)
  const settledTouch = await settleSpeculation(ctx, key, input.speculation, { handle, ...outcome })
  const storeMs = performance.now() - storeStarted
  const pauseStarted = performance.now()
  const sandboxId = handle?.id ?? outcome.record?.sandboxId ?? null
  const touched = settledTouch ?? input.touched
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

/** The manifest for the next turn's probes (with fidelity probes on and a sandbox in hand). */
async function writeTurnManifest(
  scope: TurnScope,
  input: TurnEndInput,
  processesAtResume: readonly ProcessInfo[] | undefined,
  fail: Fail,
): Promise<TurnManifest | undefined> {
  const { assessed } = input
  if (!assessed || !scope.ctx.config.fidelityProbes) return undefined
  try {
    const signal = new AbortController().signal
    return await writeManifest(
      assessed.handle,
      input.contexts,
      assessed.manifestBase,
      assessed.verified,
      signal,
      processesAtResume,
      input.written,
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

/** Remembers what this turn left, for the next turn's speculative connect and store-loss adoption. */
function rememberOutcome(
  scope: TurnScope,
  handle: SandboxHandle | undefined,
  foreign: boolean,
  action: Action,
  outcome: Released,
): void {
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
    scope.ctx.caches,
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
