// Restore, rewind and fork over the checkpoint tree: a conversation whose head moves to any kept checkpoint of
// any branch, or that branches into a new conversation. All are store writes only (a pending restore on the
// record); the session's next turn carries the restore out with the resume ladder, under its own lease, like
// any creation. Nothing here deletes a checkpoint: retention (the store's pruning at each checkpoint) does.
import { SandkeepError } from '../contract/errors.js'
import { sleep } from '../contract/retry.js'
import type {
  ForkOptions,
  ForkResult,
  RestoreOptions,
  RestoreResult,
  RewindOptions,
} from '../contract/session-manager-types.js'
import type {
  CheckpointTree,
  ForkSource,
  RewindResult,
  SessionRecord,
  SessionStore,
} from '../contract/session-store.js'
import {
  invalidArgument,
  rejectUnknownOptions,
  type SessionKey,
  validateCheckpointId,
  validateInteger,
  validateSessionKey,
} from '../contract/validation.js'
import { BUSY_RETRY, backoffMs } from './backoff.js'
import { deleteReleasedSnapshots, headOf } from './checkpoints.js'
import type { ManagerContext } from './context.js'
import { providerHasSnapshots, storeHasCheckpoints, tenantOption } from './options.js'
import { checkRecord } from './records.js'
import { killOwnedSandbox } from './tenancy.js'

const REWIND_OPTION_NAMES = [
  'toTurn',
  'tenant',
  'abortSignal',
] as const satisfies readonly (keyof RewindOptions)[]
const RESTORE_OPTION_NAMES = [
  'checkpoint',
  'tenant',
  'abortSignal',
] as const satisfies readonly (keyof RestoreOptions)[]
const FORK_OPTION_NAMES = [
  'checkpoint',
  'atTurn',
  'tenant',
  'abortSignal',
] as const satisfies readonly (keyof ForkOptions)[]
/** The highest turn number a rewind or fork may name. */
const MAX_TURN = 1_000_000_000

type CheckpointStore = SessionStore &
  Required<Pick<SessionStore, 'readCheckpoints' | 'rewind' | 'createFork'>>

/** Where a restore goes: a checkpoint id (null = the root), or the head's ancestor at a depth. */
type RestoreTarget = { checkpoint: string | null } | { toTurn: number }

/**
 * `sessions.rewind`: a restore to the head's ancestor at depth `toTurn` (0 = the root). Deletes nothing.
 * @throws SandkeepError INVALID_ARGUMENT, CAPABILITY_UNSUPPORTED, CHECKPOINT_NOT_FOUND, SESSION_BUSY
 */
export async function rewind(
  ctx: ManagerContext,
  conversationId: string,
  options: RewindOptions,
): Promise<RestoreResult> {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('rewind options', 'must be an object with toTurn (0 = before the first turn).')
  rejectUnknownOptions('rewind options', options, REWIND_OPTION_NAMES)
  const key = validateSessionKey(conversationId, tenantOption(options))
  const toTurn = validateInteger('toTurn', options.toTurn, 0, MAX_TURN)
  const signal = checkSignal(options.abortSignal)
  return restoreTo(ctx, key, { toTurn }, signal)
}

/**
 * `sessions.restore`: moves the head to a checkpoint of any branch (or the root). Everything is checked
 * before anything is written: the id's shape, the session, that no turn of this process is running. A turn
 * end of this process still pausing the sandbox is waited for; another process's turn is retried for up to
 * `createWaitMs`. The store's restore is one atomic step (it checks the id is one of this session's kept
 * checkpoints); the old sandbox is killed only after it, once the store confirmed the write.
 * @throws SandkeepError INVALID_ARGUMENT, CAPABILITY_UNSUPPORTED, CHECKPOINT_NOT_FOUND, SESSION_BUSY
 */
export async function restore(
  ctx: ManagerContext,
  conversationId: string,
  options: RestoreOptions,
): Promise<RestoreResult> {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument(
      'restore options',
      'must be an object { checkpoint } (a checkpoint id, or null for the root).',
    )
  rejectUnknownOptions('restore options', options, RESTORE_OPTION_NAMES)
  const key = validateSessionKey(conversationId, tenantOption(options))
  if (options.checkpoint === undefined)
    throw invalidArgument(
      'checkpoint',
      'is required: a checkpoint id from listCheckpoints, or null for the root (before the first turn).',
    )
  const checkpoint =
    options.checkpoint === null ? null : validateCheckpointId('checkpoint', options.checkpoint)
  const signal = checkSignal(options.abortSignal)
  return restoreTo(ctx, key, { checkpoint }, signal)
}

async function restoreTo(
  ctx: ManagerContext,
  key: SessionKey,
  target: RestoreTarget,
  signal: AbortSignal | undefined,
): Promise<RestoreResult> {
  const store = checkpointStore(ctx)
  // Without a record no turn ever ended: there is nothing to go back to, not even the root.
  const record = recordOrNotFound(checkRecord(await store.get(key), key), key)
  // A turn whose end is under way (the reply is out, the checkpoint or the pause is not done) has ended for
  // the user: wait for it. One still running is refused.
  const limits = { waitMs: ctx.config.createWaitMs, signal }
  await ctx.state.waitForEndings(key, limits)
  if (ctx.state.hasLiveTurn(key)) throw runningTurn(key)
  await ctx.state.waitForLocalEnds(key, limits)
  const result = await restoreWhenFree(ctx, store, key, record, target, signal)
  ctx.state.rememberLastTurn(key, null)
  const previous = result.record.restore?.fromSandboxId ?? null
  if (previous) {
    await killOwnedSandbox(ctx, previous, key).catch((error: unknown) =>
      ctx.emitError('rewind-kill', error, key),
    )
  }
  // A store written before checkpoint trees may still drop checkpoints on a rewind.
  if (result.dropped.length > 0) await deleteReleasedSnapshots(ctx, key, result.dropped)
  return {
    checkpoint: result.checkpoint,
    source: result.checkpoint?.snapshot && providerHasSnapshots(ctx.provider) ? 'snapshot' : 'journal',
    killedSandboxId: previous,
    toTurn: result.checkpoint?.turn ?? 0,
    droppedTurns: result.dropped.map((c) => c.turn),
  }
}

/**
 * The store call, retried while another process's turn (or its pause) holds the session, and again when
 * another restore (or a creation) changed the mapping between this call's read and its write: the later
 * restore wins, as if the two had run one after the other, and neither caller is told its lease was lost.
 */
async function restoreWhenFree(
  ctx: ManagerContext,
  store: CheckpointStore,
  key: SessionKey,
  seen: SessionRecord,
  target: RestoreTarget,
  signal: AbortSignal | undefined,
): Promise<RewindResult> {
  const deadline = performance.now() + ctx.config.createWaitMs
  let record = seen
  for (let attempt = 0, raced = 0; ; attempt++) {
    try {
      return await store.rewind(key, {
        ...target,
        expectedSandboxId: record.sandboxId,
        ttlMs: ctx.config.ttlMs,
      })
    } catch (error) {
      if (SandkeepError.hasCode(error, 'LEASE_LOST')) {
        // The mapping changed since it was read (a concurrent restore, a creation): read it again.
        if (raced >= 5) throw restoreRaced(key, error)
        raced += 1
        record = recordOrNotFound(checkRecord(await store.get(key), key), key)
        continue
      }
      if (!SandkeepError.hasCode(error, 'SESSION_BUSY')) throw error
      const left = deadline - performance.now()
      if (left <= 0 || ctx.state.hasLiveTurn(key)) throw runningTurn(key, error)
      const wait = backoffMs(attempt, { ...BUSY_RETRY, retryAfterMs: error.retryAfterMs, leftMs: left })
      await sleep(wait, signal, 'reject')
    }
  }
}

/**
 * `sessions.fork`. Reads the source's checkpoint and its branch's journal in one atomic store call, then
 * writes the new session in one atomic step that refuses an existing one. Never waits: a checkpoint and its
 * branch do not change once taken, so a turn or a restore of the source running meanwhile changes nothing
 * the fork reads. The source is not touched.
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
  const checkpointId =
    options.checkpoint === undefined || options.checkpoint === null
      ? options.checkpoint
      : validateCheckpointId('checkpoint', options.checkpoint)
  const atTurn =
    options.atTurn === undefined ? undefined : validateInteger('atTurn', options.atTurn, 0, MAX_TURN)
  checkSignal(options.abortSignal)
  const store = checkpointStore(ctx)
  if (checkRecord(await store.get(target), target)) throw sessionExists(target)
  const source = await forkSource(store, key, checkpointId, atTurn)
  const { checkpoint } = source
  const created = await store.createFork(target, {
    fromConversationId: key.conversationId,
    fromSandboxId: source.record.sandboxId,
    checkpoint: {
      id: checkpoint?.id ?? null,
      turn: checkpoint?.turn ?? 0,
      snapshot: checkpoint?.snapshot ?? null,
      manifest: checkpoint?.manifest ?? null,
    },
    journal: source.journal,
    providerId: source.record.providerId,
    template: source.record.template,
    ttlMs: ctx.config.ttlMs,
  })
  return {
    conversationId: target.conversationId,
    atTurn: checkpoint?.turn ?? 0,
    checkpoint,
    source: checkpoint?.snapshot && providerHasSnapshots(ctx.provider) ? 'snapshot' : 'journal',
    record: created,
  }
}

/**
 * What a fork copies: the record, the checkpoint (by id, by `atTurn` on the head's path, or the head) and
 * its branch's journal, read in one atomic store call where the store has `readForkSource`.
 */
async function forkSource(
  store: CheckpointStore,
  key: SessionKey,
  checkpointId: string | null | undefined,
  atTurn: number | undefined,
): Promise<ForkSource> {
  if (typeof store.readForkSource === 'function') {
    if (checkpointId !== undefined) return store.readForkSource(key, { checkpoint: checkpointId })
    return store.readForkSource(key, atTurn === undefined ? {} : { toTurn: atTurn })
  }
  // A store without the atomic read: a checkpoint and the journal in separate calls, as before trees.
  const record = recordOrNotFound(checkRecord(await store.get(key), key), key)
  const checkpoints = await store.readCheckpoints(key)
  const head = headOf(record, checkpoints)
  const found =
    checkpointId === null || atTurn === 0
      ? null
      : checkpointId !== undefined
        ? checkpoints.find((c) => c.id === checkpointId)
        : atTurn !== undefined
          ? checkpoints.find((c) => c.turn === atTurn)
          : head === null
            ? null
            : checkpoints.find((c) => c.id === head)
  if (found === undefined) {
    throw checkpointNotFound(key, checkpointId ?? `at turn ${atTurn ?? record.turnCount}`)
  }
  const journal = (await store.readJournal(key)).slice(0, found?.journalLength ?? 0).map((e) => e.step)
  return { record, checkpoint: found, journal }
}

/** `sessions.listCheckpoints`: the session's head and kept checkpoints, newest first. */
export async function listCheckpoints(
  ctx: ManagerContext,
  conversationId: string,
  options?: { tenant?: string },
): Promise<CheckpointTree> {
  const key = validateSessionKey(conversationId, tenantOption(options))
  const { store } = ctx
  if (typeof store.readCheckpoints !== 'function') return { head: null, checkpoints: [] }
  const [record, checkpoints] = await Promise.all([store.get(key), store.readCheckpoints(key)])
  return { head: headOf(record, checkpoints), checkpoints: checkpoints.toReversed() }
}

function checkpointStore(ctx: ManagerContext): CheckpointStore {
  const { store } = ctx
  if (!storeHasCheckpoints(store)) {
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message: `Store '${store.storeId}' keeps no checkpoints (readCheckpoints, rewind, createFork), which restore, rewind and fork need.`,
    })
  }
  return store
}

function recordOrNotFound(record: SessionRecord | null, key: SessionKey): SessionRecord {
  if (!record) throw checkpointNotFound(key, null, 'the conversation has no session')
  return record
}

function checkSignal(signal: unknown): AbortSignal | undefined {
  if (signal === undefined) return undefined
  if (!(signal instanceof AbortSignal))
    throw invalidArgument('options.abortSignal', 'must be an AbortSignal.')
  if (signal.aborted) throw signal.reason
  return signal
}

function checkpointNotFound(key: SessionKey, what: string | null, why?: string): SandkeepError {
  return new SandkeepError({
    code: 'CHECKPOINT_NOT_FOUND',
    message: `No checkpoint${what === null ? '' : ` ${what}`}${why ? `: ${why}` : ''}. Nothing was changed; take a checkpoint id from listCheckpoints.`,
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

function restoreRaced(key: SessionKey, cause: unknown): SandkeepError {
  return new SandkeepError({
    code: 'SESSION_BUSY',
    message:
      'Other restores or turns of this conversation kept changing it while this restore ran; this one changed nothing. Call it again.',
    tenant: key.tenant,
    conversationId: key.conversationId,
    retryable: true,
    cause,
  })
}

function runningTurn(key: SessionKey, cause?: unknown): SandkeepError {
  return new SandkeepError({
    code: 'SESSION_BUSY',
    message:
      'A turn of this conversation is running: a restore would discard what it is doing. End or abort that turn, then restore. Nothing was changed.',
    tenant: key.tenant,
    conversationId: key.conversationId,
    retryable: true,
    ...(cause === undefined ? {} : { cause }),
  })
}
