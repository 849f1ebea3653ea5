// Rewind and fork: a conversation that goes back to an earlier turn, or branches into a new one. Both are
// store writes only (a pending restore on the record); the session's next turn carries the restore out with
// the resume ladder, under its own lease, like any creation.
import { SandkeepError } from '../errors.js'
import { sleep } from '../retry.js'
import type { ForkOptions, ForkResult, RewindOptions, RewindResultReport } from '../session-manager-types.js'
import type { Checkpoint, RewindResult, SessionRecord, SessionStore } from '../session-store.js'
import {
  invalidArgument,
  rejectUnknownOptions,
  type SessionKey,
  validateInteger,
  validateSessionKey,
} from '../validation.js'
import { hasLiveTurn, rememberLastTurn } from './caches.js'
import { deleteReleasedSnapshots } from './checkpoints.js'
import type { ManagerContext } from './context.js'
import { busyBackoffMs, waitForEndings, waitForLocalEnds } from './end-wait.js'
import { providerHasSnapshots, storeHasCheckpoints, tenantOption } from './options.js'
import { checkRecord } from './records.js'
import { killOwnedSandbox } from './tenancy.js'

const REWIND_OPTION_NAMES = [
  'toTurn',
  'tenant',
  'abortSignal',
] as const satisfies readonly (keyof RewindOptions)[]
const FORK_OPTION_NAMES = [
  'atTurn',
  'tenant',
  'abortSignal',
] as const satisfies readonly (keyof ForkOptions)[]
/** The highest turn number a rewind or fork may name. */
const MAX_TURN = 1_000_000_000

type CheckpointStore = SessionStore &
  Required<Pick<SessionStore, 'readCheckpoints' | 'rewind' | 'createFork'>>

/**
 * `sessions.rewind`. Everything is checked before anything is written: the session, the checkpoint, and that
 * no turn of this process is running. A turn end of this process still pausing the sandbox is waited for;
 * another process's turn is retried for up to `createWaitMs`. The store's rewind is one atomic step; the old
 * sandbox is killed and the dropped checkpoints' snapshots deleted after it (a failure there is reported as
 * an `error` event, and gc finds what is left).
 * @throws SandkeepError INVALID_ARGUMENT, CAPABILITY_UNSUPPORTED, CHECKPOINT_NOT_FOUND, SESSION_BUSY
 */
export async function rewind(
  ctx: ManagerContext,
  conversationId: string,
  options: RewindOptions,
): Promise<RewindResultReport> {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('rewind options', 'must be an object with toTurn (0 = before the first turn).')
  rejectUnknownOptions('rewind options', options, REWIND_OPTION_NAMES)
  const key = validateSessionKey(conversationId, tenantOption(options))
  const toTurn = validateInteger('toTurn', options.toTurn, 0, MAX_TURN)
  const signal = checkSignal(options.abortSignal)
  const store = checkpointStore(ctx)
  const record = await sessionRecord(store, key, toTurn)
  const checkpoints = await store.readCheckpoints(key)
  if (toTurn > 0 && !checkpoints.some((c) => c.turn === toTurn)) {
    throw checkpointNotFound(key, toTurn, missingReason(record, checkpoints, toTurn))
  }
  // A turn whose end is under way (the reply is out, the checkpoint or the pause is not done) has ended for
  // the user: wait for it. One still running is refused.
  await waitForEndings(ctx, key, signal)
  if (hasLiveTurn(ctx.caches, key)) throw runningTurn(key)
  await waitForLocalEnds(ctx, key, signal)
  const result = await rewindWhenFree(ctx, store, key, record, toTurn, signal)
  rememberLastTurn(ctx.caches, key, null)
  const previous = result.record.restore?.fromSandboxId ?? null
  if (previous) {
    await killOwnedSandbox(ctx, previous, key).catch((error: unknown) =>
      ctx.emitError('rewind-kill', error, key),
    )
  }
  const kept = checkpoints.filter((c) => c.turn <= toTurn)
  await deleteReleasedSnapshots(ctx, key, result.dropped, kept)
  return {
    toTurn,
    source: result.checkpoint?.snapshot && providerHasSnapshots(ctx.provider) ? 'snapshot' : 'journal',
    checkpoint: result.checkpoint,
    droppedTurns: result.dropped.map((c) => c.turn),
    killedSandboxId: previous,
  }
}

/**
 * `sessions.fork`. Reads the source's checkpoint and journal, then writes the new session in one atomic
 * step that refuses an existing one. Never waits: a checkpoint does not change once taken, so a turn of the
 * source running meanwhile changes nothing the fork reads (its journal steps come after the checkpoint's
 * length). The source is not touched.
 * @throws SandkeepError INVALID_ARGUMENT, CAPABILITY_UNSUPPORTED, CHECKPOINT_NOT_FOUND, SESSION_EXISTS
 */
export async function fork(
  ctx: ManagerContext,
  conversationId: string,
  newConversationId: string,
  options: ForkOptions = {},
): Promise<ForkResult> {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('fork options', 'must be an object.')
  rejectUnknownOptions('fork options', options, FORK_OPTION_NAMES)
  const tenant = tenantOption(options)
  const key = validateSessionKey(conversationId, tenant)
  const target = validateSessionKey(newConversationId, tenant)
  if (target.conversationId === key.conversationId)
    throw invalidArgument('newConversationId', 'must differ from the conversation forked from.')
  const atTurn =
    options.atTurn === undefined ? undefined : validateInteger('atTurn', options.atTurn, 0, MAX_TURN)
  checkSignal(options.abortSignal)
  const store = checkpointStore(ctx)
  const record = await sessionRecord(store, key, atTurn ?? 0)
  if (checkRecord(await store.get(target), target)) throw sessionExists(target)
  const checkpoints = await store.readCheckpoints(key)
  const checkpoint = forkPoint(key, record, checkpoints, atTurn)
  const journal = (await store.readJournal(key)).slice(0, checkpoint.journalLength).map((entry) => entry.step)
  const created = await store.createFork(target, {
    fromConversationId: key.conversationId,
    fromSandboxId: record.sandboxId,
    checkpoint: { turn: checkpoint.turn, snapshot: checkpoint.snapshot, manifest: checkpoint.manifest },
    journal,
    providerId: record.providerId,
    template: record.template,
    ttlMs: ctx.config.ttlMs,
  })
  return {
    conversationId: target.conversationId,
    atTurn: checkpoint.turn,
    source: checkpoint.snapshot && providerHasSnapshots(ctx.provider) ? 'snapshot' : 'journal',
    record: created,
  }
}

/** `sessions.listCheckpoints`: the session's checkpoints, oldest first; none when the store keeps none. */
export async function listCheckpoints(
  ctx: ManagerContext,
  conversationId: string,
  options?: { tenant?: string },
): Promise<Checkpoint[]> {
  const key = validateSessionKey(conversationId, tenantOption(options))
  const { store } = ctx
  if (typeof store.readCheckpoints !== 'function') return []
  return store.readCheckpoints(key)
}

/** The store call, retried while another process's turn (or its pause) holds the session. */
async function rewindWhenFree(
  ctx: ManagerContext,
  store: CheckpointStore,
  key: SessionKey,
  record: SessionRecord,
  toTurn: number,
  signal: AbortSignal | undefined,
): Promise<RewindResult> {
  const deadline = performance.now() + ctx.config.createWaitMs
  const input = { toTurn, expectedSandboxId: record.sandboxId, ttlMs: ctx.config.ttlMs }
  for (let attempt = 0; ; attempt++) {
    try {
      return await store.rewind(key, input)
    } catch (error) {
      if (!SandkeepError.hasCode(error, 'SESSION_BUSY')) throw error
      const left = deadline - performance.now()
      if (left <= 0 || hasLiveTurn(ctx.caches, key)) throw runningTurn(key, error)
      await sleep(busyBackoffMs(attempt, error.retryAfterMs, left), signal, 'reject')
    }
  }
}

/** The checkpoint a fork starts from: `atTurn`'s, or the latest; turn 0 is the empty start. */
function forkPoint(
  key: SessionKey,
  record: SessionRecord,
  checkpoints: readonly Checkpoint[],
  atTurn: number | undefined,
): Pick<Checkpoint, 'turn' | 'snapshot' | 'manifest' | 'journalLength'> {
  if (atTurn === 0) return { turn: 0, snapshot: null, manifest: null, journalLength: 0 }
  const found = atTurn === undefined ? checkpoints.at(-1) : checkpoints.find((c) => c.turn === atTurn)
  if (found) return found
  if (atTurn === undefined) {
    throw checkpointNotFound(
      key,
      record.turnCount,
      'the session has no checkpoint yet (turn on the checkpoints option, or fork at turn 0)',
    )
  }
  throw checkpointNotFound(key, atTurn, missingReason(record, checkpoints, atTurn))
}

function checkpointStore(ctx: ManagerContext): CheckpointStore {
  const { store } = ctx
  if (!storeHasCheckpoints(store)) {
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message: `Store '${store.storeId}' keeps no checkpoints (readCheckpoints, rewind, createFork), which rewind and fork need.`,
    })
  }
  return store
}

async function sessionRecord(store: SessionStore, key: SessionKey, turn: number): Promise<SessionRecord> {
  const record = checkRecord(await store.get(key), key)
  if (!record) throw checkpointNotFound(key, turn, 'the conversation has no session')
  return record
}

function checkSignal(signal: unknown): AbortSignal | undefined {
  if (signal === undefined) return undefined
  if (!(signal instanceof AbortSignal))
    throw invalidArgument('options.abortSignal', 'must be an AbortSignal.')
  if (signal.aborted) throw signal.reason
  return signal
}

/** Why a turn has no checkpoint, in the terms of the session's turns. */
function missingReason(record: SessionRecord, checkpoints: readonly Checkpoint[], turn: number): string {
  const kept = checkpoints.map((c) => c.turn)
  const keptText = kept.length > 0 ? `kept: ${kept.join(', ')}` : 'none kept'
  if (turn > record.turnCount) return `the session has ${record.turnCount} turn(s) so far (${keptText})`
  if (kept.length > 0 && turn < kept[0]!)
    return `it was pruned: the session keeps the latest checkpoints only (${keptText})`
  return `none was taken at the end of that turn (${keptText}; checkpoints are taken with the checkpoints option)`
}

function checkpointNotFound(key: SessionKey, turn: number, why: string): SandkeepError {
  return new SandkeepError({
    code: 'CHECKPOINT_NOT_FOUND',
    message: `No checkpoint of turn ${turn}: ${why}. Nothing was changed.`,
    tenant: key.tenant,
    conversationId: key.conversationId,
  })
}

function sessionExists(key: SessionKey): SandkeepError {
  return new SandkeepError({
    code: 'SESSION_EXISTS',
    message:
      'A session with this conversation id already exists: fork into a new conversation id. Nothing was written.',
    tenant: key.tenant,
    conversationId: key.conversationId,
  })
}

function runningTurn(key: SessionKey, cause?: unknown): SandkeepError {
  return new SandkeepError({
    code: 'SESSION_BUSY',
    message:
      'A turn of this conversation is running: a rewind would discard what it is doing. End or abort that turn, then rewind. Nothing was changed.',
    tenant: key.tenant,
    conversationId: key.conversationId,
    retryable: true,
    ...(cause === undefined ? {} : { cause }),
  })
}
