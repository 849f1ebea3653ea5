// The memory store's session entry and the record writes its operations share (../memory-store.ts).
import type {
  Checkpoint,
  CheckpointInput,
  SessionRecord,
  SessionSandboxState,
  SessionStore,
} from '../session-store.js'
import { SESSION_RECORD_SCHEMA_VERSION } from '../session-store.js'
import type { SessionKey } from '../validation.js'
import type { CheckedReleaseInput } from './input.js'

export interface Holder {
  expiresAt: number
  token: number
  startedAt: number
}

export interface Entry {
  record: SessionRecord | null
  holders: Map<string, Holder>
  /** Last fencing token issued. */
  counter: number
  /** Holder id of the creation claimant. */
  claim: string | null
  /** Holder id whose release holds the session while it pauses the sandbox (`holdIfLast`). */
  hold: string | null
  /** Earliest `runningFrom` of the turns that released while others still held the session. */
  runFrom: number | null
  journal: string[]
  journalBytes: number
  /** Kept checkpoints, oldest first (one per turn). */
  checkpoints: Checkpoint[]
  /** When the whole session expires (idle TTL), store clock. */
  expiresAt: number
  /** Listing score (last activity); `null` while not listed. */
  activity: number | null
  /** Listing tie-breaker, the same hash the Redis store uses. */
  member: string
}

/**
 * Each memory store's way to its raw entries, for its own tests only (the conformance suite's corruption
 * hooks damage a record behind the store's back, as a bad write or a bug would). Not exported by any entry.
 */
export const memoryEntries = new WeakMap<SessionStore, (key: SessionKey) => Entry | undefined>()

/** Drops lapsed holders and a claim whose holder lapsed; what Redis's scripts do on every call. */
export function prune(entry: Entry, now: number): void {
  for (const [id, holder] of entry.holders) if (holder.expiresAt <= now) entry.holders.delete(id)
  if (entry.claim !== null && !entry.holders.has(entry.claim)) entry.claim = null
  if (entry.hold !== null && !entry.holders.has(entry.hold)) entry.hold = null
}

/** Moves a session up in its tenant's listing. */
export function touch(entry: Entry, score: number): void {
  entry.activity = entry.activity === null ? score : Math.max(entry.activity, score)
}

/** The record a first `setSandbox` writes, before its mapping fields. */
export function newRecord(key: SessionKey, now: number, startedAt: number): SessionRecord {
  return {
    schemaVersion: SESSION_RECORD_SCHEMA_VERSION,
    tenant: key.tenant,
    conversationId: key.conversationId,
    sandboxId: null,
    providerId: null,
    template: null,
    createdAt: now,
    updatedAt: now,
    lastTurnStartedAt: startedAt,
    lastTurnEndedAt: null,
    turnCount: 0,
    runningSeconds: 0,
    pausedSeconds: 0,
    state: 'running',
    pausedAt: null,
    mappingToken: 0,
    manifest: null,
    lastTurnUsedSandbox: null,
    restore: null,
  }
}

/** Writes a released turn into its record: manifest, counters, and the state if it was the last holder. */
export function recordTurnEnd(
  record: SessionRecord,
  checked: CheckedReleaseInput,
  turn: { last: boolean; runFrom: number | null; now: number; token: number },
): void {
  // A turn that began before a rewind still pending (its token is below the one the rewind took) was
  // discarded with what it did: it is not a turn of the rewound conversation, nor does it set its state.
  const discarded = record.restore !== null && turn.token < record.mappingToken
  // A manifest describes one sandbox: a holder whose sandbox was re-mapped meanwhile must not replace the
  // manifest of the new one. A manifest conditional on the turn count is stale once another turn ended
  // since this one began.
  const current =
    checked.manifestIfTurnCount === undefined || checked.manifestIfTurnCount === record.turnCount
  if (
    checked.manifest === null ||
    (current && checked.manifest !== undefined && checked.manifest.sandboxId === record.sandboxId)
  ) {
    record.manifest = checked.manifest
  }
  record.lastTurnEndedAt = Math.max(record.lastTurnEndedAt ?? 0, checked.turnEndedAt)
  if (!discarded) record.turnCount += 1
  record.runningSeconds += checked.runningSeconds
  // The sandbox ran from the first of the overlapping turns' starts to the last one's end.
  if (turn.last && turn.runFrom !== null) {
    record.runningSeconds += Math.max(0, checked.turnEndedAt - turn.runFrom) / 1000
  }
  record.pausedSeconds += checked.pausedSeconds
  if (checked.usedSandbox !== undefined) record.lastTurnUsedSandbox = checked.usedSandbox
  if (turn.last && checked.stateIfLast !== undefined && !discarded) {
    applyState(record, checked.stateIfLast, turn.now)
  }
  record.updatedAt = turn.now
}

/** Records a sandbox state: `pausedAt` is set on pause and cleared when running again. */
export function applyState(record: SessionRecord, state: SessionSandboxState, at: number): void {
  record.state = state
  if (state === 'paused') record.pausedAt = at
  else if (state === 'running') record.pausedAt = null
}

/**
 * Records the checkpoint of the turn `record` just ended (its new `turnCount`), taken of `input.sandboxId`
 * at `createdAt`: replaces one of the same turn, then prunes the oldest past `input.keep`. Returns the
 * checkpoint and the ones it replaced or pruned (oldest first), or `undefined` when refused: the record no
 * longer maps that sandbox, or a rewind (a higher mapping token) came after the releasing turn began.
 */
export function recordCheckpoint(
  entry: Entry,
  input: CheckpointInput,
  turn: { fencingToken: number; createdAt: number },
): { checkpoint: Checkpoint; pruned: Checkpoint[] } | undefined {
  const record = entry.record
  if (!record || turn.fencingToken < record.mappingToken || record.sandboxId !== input.sandboxId) {
    return undefined
  }
  const checkpoint: Checkpoint = {
    turn: record.turnCount,
    createdAt: turn.createdAt,
    sandboxId: input.sandboxId,
    snapshot: input.snapshot,
    journalLength: entry.journal.length,
    manifest: record.manifest === null ? null : structuredClone(record.manifest),
  }
  const pruned = entry.checkpoints.filter((kept) => kept.turn === checkpoint.turn)
  const kept = entry.checkpoints.filter((kept) => kept.turn !== checkpoint.turn)
  kept.push(checkpoint)
  kept.sort((a, b) => a.turn - b.turn)
  pruned.push(...kept.splice(0, Math.max(0, kept.length - input.keep)))
  entry.checkpoints = kept
  return { checkpoint, pruned: pruned.sort((a, b) => a.turn - b.turn) }
}
