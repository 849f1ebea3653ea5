// One typed function per Lua script in ./commands: each builds the script's KEYS and ARGV, picks the
// one-node or the Cluster variant, and reads the reply into named fields (a corrupt key becomes
// STORE_CORRUPT naming it). The KEYS/ARGV order of each script is documented at the top of its .lua file.
import {
  type CheckedAcquireOptions,
  type CheckedCreateForkInput,
  type CheckedReleaseInput,
  type CheckedRewindInput,
  type Checkpoint,
  corruptRecordError,
  type JournalStep,
  type JournalUsage,
  type Lease,
  type MidTurnCheckpointInput,
  newCheckpointId,
  parseRecordFields,
  type SessionKey,
  type SessionRecord,
  type SessionSandboxState,
  type SetSandboxInput,
} from '@sandkeep/core/store'
import { checkpointOfReply, checkpointsFromHash, checkpointsOfReply } from './checkpoint-fields.js'
import type { RedisClient } from './connection.js'
import type { SessionKeys } from './keys.js'
import { recordFieldMap } from './record-fields.js'
import { loadScripts, type ScriptFile } from './scripts.js'

type ScriptArgument = string | number
type ScriptReply = Array<string | number | Array<string | null>>
type ScriptCommand = (...args: ScriptArgument[]) => Promise<ScriptReply>

/** The session a command runs on. */
export interface Session {
  keys: SessionKeys
  /** Its key; `undefined` when only the hash is known (a listing). */
  key: SessionKey | undefined
  /** What the stored record must name: a listing knows only the tenant. */
  expected: { tenant: string; conversationId?: string }
}

/** The session of a known key. */
export function sessionOf(keys: SessionKeys, key: SessionKey): Session {
  return { keys, key, expected: key }
}

function run(redis: RedisClient, file: ScriptFile, ...args: ScriptArgument[]): Promise<ScriptReply> {
  const command = (redis as unknown as Record<string, ScriptCommand>)[loadScripts().get(file)!.command]!
  return command.call(redis, ...args)
}

/**
 * Runs a script on `keys` (its KEYS, in order) and `args`, and refuses a `{ 'corrupt', i }` reply with
 * STORE_CORRUPT naming KEYS[i].
 */
async function runChecked(
  redis: RedisClient,
  file: ScriptFile,
  session: Session,
  keys: string[],
  args: ScriptArgument[],
  why = 'it does not parse, has an unknown schemaVersion or the wrong type',
): Promise<ScriptReply> {
  const reply = await run(redis, file, ...keys, ...args)
  if (reply[0] === 'corrupt') {
    throw corruptRecordError(keys[Number(reply[1]) - 1] ?? session.keys.record, why, session.key)
  }
  return reply
}

/** KEYS[1..4] of the session scripts. */
const sessionKeys = ({ keys }: Session) => [keys.record, keys.lease, keys.journal, keys.checkpoints]

/**
 * Runs a session write that also lists the session in its tenant's index. On one node `<name>-5` does both
 * (ARGV: `args`, the index member, then `score` when given); with `singleSlot` (Cluster) `<name>-4` and
 * the index touch go side by side, the index being in another slot. `score` defaults to now.
 */
async function runListed(
  redis: RedisClient,
  session: Session,
  name: 'set-sandbox' | 'release',
  args: ScriptArgument[],
  score: number | undefined,
  singleSlot: boolean,
): Promise<ScriptReply> {
  const { keys } = session
  if (!singleSlot) {
    const indexArgs = score === undefined ? [keys.member] : [keys.member, score]
    return runChecked(
      redis,
      `${name}-5`,
      session,
      [...sessionKeys(session), keys.index],
      [...args, ...indexArgs],
    )
  }
  const [reply] = await Promise.all([
    runChecked(redis, `${name}-4`, session, sessionKeys(session), args),
    indexTouch(redis, keys, score ?? Date.now()),
  ])
  return reply
}

/** A record from a script's positional reply (empty = no record). */
function recordOf(values: unknown, session: Session): SessionRecord | null {
  if (!Array.isArray(values) || values.length === 0) return null
  return parseRecordFields(recordFieldMap(values), session.keys.record, session.expected)
}

/** Moves a session up in its tenant's listing (another slot on a Cluster, so its own command). */
export function indexTouch(redis: RedisClient, keys: SessionKeys, score: number): Promise<unknown> {
  return run(redis, 'index-touch-1', keys.index, keys.member, Math.trunc(score))
}

/** Drops listing entries (`member, score` pairs) whose session is gone; answers how many it removed. */
export async function indexPrune(redis: RedisClient, index: string, gone: string[]): Promise<number> {
  return Number(await run(redis, 'index-prune-1', index, ...gone))
}

/** The store clock (the server's TIME), epoch ms, read through `key`; undefined when the reply is not a number. */
export async function clock(redis: RedisClient, key: string): Promise<number | undefined> {
  const reply: unknown = await run(redis, 'clock-1', key)
  const now = Number(reply)
  return Number.isFinite(now) && now > 0 ? now : undefined
}

/** Ends a hold kept by a release with holdIfLast; false when there was none of this holder's. */
export async function releaseHold(redis: RedisClient, keys: SessionKeys, lease: Lease): Promise<boolean> {
  return Number(await run(redis, 'release-hold-1', keys.lease, lease.holderId, lease.fencingToken)) === 1
}

/** Removes a holder whose acquire was given up on (sent after it on the same connection). */
export function dropHolder(redis: RedisClient, keys: SessionKeys, holderId: string): Promise<unknown> {
  return run(redis, 'drop-holder-1', keys.lease, holderId)
}

/** What `acquire-4` answers: the turn begun, or the time left on another holder's hold. */
export type AcquireReply =
  | {
      held: false
      record: SessionRecord | null
      create: boolean
      holders: number
      fencingToken: number
      expiresAt: number
    }
  | { held: true; retryAfterMs: number }

/**
 * Begins a turn: adds the holder, issues a fencing token, grants the creation claim when it is free; or
 * answers the hold another holder's release keeps while it pauses.
 */
export async function acquire(
  redis: RedisClient,
  session: Session,
  key: SessionKey,
  input: CheckedAcquireOptions,
): Promise<AcquireReply> {
  const args = [key.tenant, key.conversationId, input.holderId, input.leaseMs, input.ttlMs]
  const reply = await runChecked(redis, 'acquire-4', session, sessionKeys(session), args)
  if (reply[0] === 'held') return { held: true, retryAfterMs: Number(reply[1]) }
  const [, record, create, holders, fencingToken, expiresAt] = reply
  return {
    held: false,
    record: recordOf(record, session),
    create: create === 1,
    holders: Number(holders),
    fencingToken: Number(fencingToken),
    expiresAt: Number(expiresAt),
  }
}

/** Extends a live lease; answers its new expiry, or undefined when the lease is lost. */
export async function renew(
  redis: RedisClient,
  session: Session,
  lease: Lease,
  input: { leaseMs: number; ttlMs: number },
): Promise<number | undefined> {
  const args = [lease.holderId, lease.fencingToken, input.leaseMs, input.ttlMs]
  const [status, expiresAt] = await runChecked(redis, 'renew-4', session, sessionKeys(session), args)
  return status === 'ok' ? Number(expiresAt) : undefined
}

/** Asks for the creation claim again; undefined when the caller's lease is lost. */
export async function claimCreation(
  redis: RedisClient,
  session: Session,
  key: SessionKey,
  lease: Lease,
): Promise<{ record: SessionRecord | null; create: boolean } | undefined> {
  const { keys } = session
  const args = [key.tenant, key.conversationId, lease.holderId, lease.fencingToken]
  const reply = await runChecked(redis, 'claim-creation-2', session, [keys.record, keys.lease], args)
  const [status, record, create] = reply
  return status === 'ok' ? { record: recordOf(record, session), create: create === 1 } : undefined
}

/** What `set-sandbox` answers: the record, or why the lease is lost. */
export type SetSandboxReply =
  | { written: true; record: SessionRecord }
  | { written: false; reason: 'lapsed' | 'stale-token' | 'mismatch'; mappingToken: string }

/** Compare-and-set of the mapping, fenced; lists the session (see {@link runListed}). */
export async function setSandbox(
  redis: RedisClient,
  session: Session,
  write: { key: SessionKey; lease: Lease; input: SetSandboxInput; checked: Required<SetSandboxInput> },
  singleSlot: boolean,
): Promise<SetSandboxReply> {
  const { key, lease, input, checked } = write
  const args: ScriptArgument[] = [
    key.tenant,
    key.conversationId,
    lease.holderId,
    lease.fencingToken,
    checked.sandboxId,
    checked.expectedSandboxId ?? '',
    checked.providerId,
    input.template === undefined ? 'keep' : checked.template === null ? 'null' : 'set',
    checked.template ?? '',
    checked.state,
    checked.ttlMs,
  ]
  const reply = await runListed(redis, session, 'set-sandbox', args, undefined, singleSlot)
  const [status, detail, mappingToken] = reply
  if (status === 'ok') return { written: true, record: recordOf(detail, session)! }
  return { written: false, reason: detail as 'lapsed', mappingToken: String(mappingToken) }
}

/** What `release` answers: the contract's result, less what the store adds. */
export interface ReleaseReply {
  last: boolean
  record: SessionRecord | null
  held?: true
  checkpoint?: Checkpoint
  checkpointRefused?: true
  prunedCheckpoints?: Checkpoint[]
}

/**
 * Ends a holder's turn, recording its checkpoint when asked; moves the session up in its listing (see
 * {@link runListed}).
 */
export async function release(
  redis: RedisClient,
  session: Session,
  end: { key: SessionKey; lease: Lease; checked: CheckedReleaseInput },
  singleSlot: boolean,
): Promise<ReleaseReply> {
  const { key, lease, checked } = end
  const manifest = checked.manifest
  const checkpoint = checked.checkpoint
  const args: ScriptArgument[] = [
    key.tenant,
    key.conversationId,
    lease.holderId,
    lease.fencingToken,
    manifest === undefined ? '' : manifest === null ? 'null' : JSON.stringify(manifest),
    manifest ? manifest.sandboxId : '',
    checked.turnEndedAt,
    String(checked.runningSeconds),
    String(checked.pausedSeconds),
    checked.stateIfLast ?? '',
    checked.ttlMs,
    checked.manifestIfTurnCount ?? '',
    checked.runningFrom ?? '',
    checked.usedSandbox === undefined ? '' : checked.usedSandbox ? '1' : '0',
    checked.holdIfLast ? '1' : '',
    checkpoint?.sandboxId ?? '',
    checkpoint?.snapshot ? JSON.stringify(checkpoint.snapshot) : '',
    checkpoint?.keep ?? '',
    checkpoint ? newCheckpointId() : '',
  ]
  const reply = await runListed(redis, session, 'release', args, checked.turnEndedAt, singleSlot)
  const [, last, record, held, checkpointStatus, recorded, pruned] = reply
  const where = session.keys.checkpoints
  const result: ReleaseReply = { last: last === 1, record: recordOf(record, session) }
  if (held === 1) result.held = true
  if (checkpointStatus === 1) {
    result.checkpoint = checkpointOfReply(recorded, where)
    result.prunedCheckpoints = checkpointsOfReply(pruned, where)
  } else if (checkpoint) {
    // Refused by the script (2), or no reply of it from an older script: either way nothing was recorded.
    result.checkpointRefused = true
  }
  return result
}

/** Records a sandbox state; null when there is no record. */
export async function setState(
  redis: RedisClient,
  session: Session,
  key: SessionKey,
  change: { state: SessionSandboxState; at: number | undefined; ttlMs: number },
): Promise<SessionRecord | null> {
  const args = [key.tenant, key.conversationId, change.state, change.at ?? '', change.ttlMs]
  const [status, record] = await runChecked(redis, 'set-state-4', session, sessionKeys(session), args)
  return status === 'ok' ? recordOf(record, session) : null
}

/** Reads a record; null when there is none. `conversationId` '' when only the hash is known. */
export async function readRecord(
  redis: RedisClient,
  session: Session,
  tenant: string,
  conversationId: string,
): Promise<SessionRecord | null> {
  const reply = await runChecked(
    redis,
    'read-record-1',
    session,
    [session.keys.record],
    [tenant, conversationId],
  )
  const [status, record] = reply
  return status === 'ok' ? recordOf(record, session) : null
}

/**
 * Appends a journal step unless a limit is reached (fenced by `lease` when given); answers the journal's
 * usage when it is full, or why the lease is lost.
 */
export async function appendJournal(
  redis: RedisClient,
  session: Session,
  step: JournalStep,
  limits: { maxJournalSteps: number; maxJournalBytes: number; ttlMs: number },
  lease: Lease | undefined,
): Promise<{ full: JournalUsage } | { lost: string } | undefined> {
  const args = [
    JSON.stringify(step),
    limits.maxJournalSteps,
    limits.maxJournalBytes,
    limits.ttlMs,
    lease?.holderId ?? '',
    lease?.fencingToken ?? '',
  ]
  const [status, steps, bytes] = await runChecked(
    redis,
    'append-journal-4',
    session,
    sessionKeys(session),
    args,
  )
  if (status === 'full') return { full: { steps: Number(steps), bytes: Number(bytes) } }
  if (status === 'lost') return { lost: String(steps) }
  return undefined
}

/** The head's branch journal (its parts along the path, then the entries since the head), raw. */
export async function readJournal(redis: RedisClient, session: Session): Promise<string[]> {
  const { keys } = session
  const [, segments, open] = await runChecked(
    redis,
    'read-journal-3',
    session,
    [keys.record, keys.journal, keys.checkpoints],
    [],
    'it holds the wrong Redis type',
  )
  return [...splitSegments(segments), ...(Array.isArray(open) ? open.map(String) : [])]
}

/** Journal parts as a script replies them (each: entries joined by a newline, which JSON never holds raw). */
function splitSegments(reply: unknown): string[] {
  if (!Array.isArray(reply)) return []
  return reply.flatMap((segment) => String(segment).split('\n'))
}

/** What `read-fork-source-4` answers. */
export type ForkSourceReply =
  | { status: 'ok'; record: SessionRecord; checkpoint: Checkpoint | null; entries: string[] }
  | { status: 'missing'; kept: number; depth: number; pruned: boolean }

/** Reads a fork's source atomically: record, checkpoint, that checkpoint's branch journal. */
export async function readForkSource(
  redis: RedisClient,
  session: Session,
  key: SessionKey,
  target: { checkpoint: string | null } | { toTurn: number } | Record<string, never>,
): Promise<ForkSourceReply> {
  const [mode, value] =
    'checkpoint' in target
      ? ['id', target.checkpoint ?? '']
      : 'toTurn' in target
        ? ['turn', target.toTurn]
        : ['head', '']
  const args = [key.tenant, key.conversationId, mode, value]
  const reply = await runChecked(redis, 'read-fork-source-4', session, sessionKeys(session), args)
  const [status, detail, third, fourth] = reply
  if (status === 'missing') {
    return { status, kept: Number(detail), depth: Number(third), pruned: fourth === 'pruned' }
  }
  const where = session.keys.checkpoints
  return {
    status: 'ok',
    record: recordOf(detail, session)!,
    checkpoint: Array.isArray(third) && third.length > 0 ? checkpointOfReply(third, where) : null,
    entries: splitSegments(fourth),
  }
}

/** What `checkpoint-4` answers. */
export type MidTurnReply =
  | { status: 'ok'; checkpoint: Checkpoint; pruned: Checkpoint[] }
  | { status: 'lost'; why: string }

/** Records a checkpoint mid-turn, fenced by the lease. */
export async function checkpoint(
  redis: RedisClient,
  session: Session,
  write: { key: SessionKey; lease: Lease; input: MidTurnCheckpointInput },
): Promise<MidTurnReply> {
  const { key, lease, input } = write
  const args = [
    key.tenant,
    key.conversationId,
    lease.holderId,
    lease.fencingToken,
    newCheckpointId(),
    input.sandboxId,
    input.snapshot ? JSON.stringify(input.snapshot) : '',
    input.manifest ? JSON.stringify(input.manifest) : '',
    input.keep,
  ]
  const [status, detail, pruned] = await runChecked(
    redis,
    'checkpoint-4',
    session,
    sessionKeys(session),
    args,
  )
  if (status === 'lost') return { status, why: String(detail) }
  const where = session.keys.checkpoints
  return {
    status: 'ok',
    checkpoint: checkpointOfReply(detail, where),
    pruned: checkpointsOfReply(pruned, where),
  }
}

/** Empties the journal (and its byte count). */
export async function clearJournal(redis: RedisClient, session: Session): Promise<void> {
  const { keys } = session
  await runChecked(
    redis,
    'clear-journal-2',
    session,
    [keys.lease, keys.journal],
    [],
    'it holds the wrong Redis type',
  )
}

/** Every checkpoint of a session, oldest first. */
export async function readCheckpoints(redis: RedisClient, session: Session): Promise<Checkpoint[]> {
  const where = session.keys.checkpoints
  const [, flat] = await runChecked(redis, 'read-checkpoints-1', session, [where], [], 'it is not a hash')
  return checkpointsFromHash(Array.isArray(flat) ? flat : [], where)
}

/** What `rewind` answers: the rewound session, or why it was refused. */
export type RewindReply =
  | { status: 'ok'; record: SessionRecord; checkpoint: Checkpoint | null }
  | { status: 'busy'; retryAfterMs: number }
  | { status: 'mismatch' }
  | { status: 'missing'; kept: number; depth: number; pruned: boolean }

/** Sets a session no turn holds back to a checkpoint (see rewind-4.lua). */
export async function rewind(
  redis: RedisClient,
  session: Session,
  write: { key: SessionKey; checked: CheckedRewindInput },
): Promise<RewindReply> {
  const { key, checked } = write
  const [mode, value] =
    checked.checkpoint !== undefined ? ['id', checked.checkpoint ?? ''] : ['turn', checked.toTurn]
  const args = [key.tenant, key.conversationId, mode, value, checked.expectedSandboxId ?? '', checked.ttlMs]
  const reply = await runChecked(redis, 'rewind-4', session, sessionKeys(session), args)
  const where = session.keys.checkpoints
  const [status, detail, target, why] = reply
  if (status === 'busy') return { status, retryAfterMs: Number(detail) }
  if (status === 'mismatch') return { status }
  if (status === 'missing') {
    return { status, kept: Number(detail), depth: Number(target), pruned: why === 'pruned' }
  }
  return {
    status: 'ok',
    record: recordOf(detail, session)!,
    checkpoint: Array.isArray(target) && target.length > 0 ? checkpointOfReply(target, where) : null,
  }
}

/** What `createFork` answers: the new record, or why nothing was written. */
export type CreateForkReply =
  | { status: 'ok'; record: SessionRecord }
  | { status: 'exists' }
  | { status: 'full'; used: JournalUsage }

/**
 * Creates a fork's session in its own slot. On one node `create-fork-5` lists it in the same script; on a
 * Cluster (`singleSlot`) the index touch follows `create-fork-4`, only once the fork was written.
 */
export async function createFork(
  redis: RedisClient,
  session: Session,
  write: {
    key: SessionKey
    checked: CheckedCreateForkInput
    limits: { maxJournalSteps: number; maxJournalBytes: number }
  },
  singleSlot: boolean,
): Promise<CreateForkReply> {
  const { key, checked, limits } = write
  const { checkpoint } = checked
  const restore = {
    kind: 'forked',
    turn: checkpoint.turn,
    checkpointId: checkpoint.id,
    snapshot: checkpoint.snapshot,
    fromSandboxId: checked.fromSandboxId,
    fromConversationId: checked.fromConversationId,
  }
  const args: ScriptArgument[] = [
    key.tenant,
    key.conversationId,
    checked.providerId ?? '',
    checked.template ?? '',
    checkpoint.turn,
    checkpoint.manifest ? JSON.stringify(checkpoint.manifest) : '',
    JSON.stringify(restore),
    limits.maxJournalSteps,
    limits.maxJournalBytes,
    checked.ttlMs,
    checked.journal.length,
    ...checked.journal.map((step) => JSON.stringify(step)),
  ]
  const { keys } = session
  const reply = singleSlot
    ? await runChecked(redis, 'create-fork-4', session, sessionKeys(session), args)
    : await runChecked(
        redis,
        'create-fork-5',
        session,
        [...sessionKeys(session), keys.index],
        [...args, keys.member],
      )
  const [status, detail, bytes] = reply
  if (status === 'exists') return { status }
  if (status === 'full') return { status, used: { steps: Number(detail), bytes: Number(bytes) } }
  const record = recordOf(detail, session)!
  if (singleSlot) await indexTouch(redis, keys, record.updatedAt)
  return { status: 'ok', record }
}
