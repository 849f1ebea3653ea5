// The memory store's session entry and the record writes its operations share (../memory-store.ts).
import type {
  Checkpoint,
  CheckpointInput,
  SessionRecord,
  SessionSandboxState,
  SessionStore,
} from '../contract/session-store.js'
import { SESSION_RECORD_SCHEMA_VERSION } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import { MAX_PRUNED_IDS_REMEMBERED } from './checkpoint.js'
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
  /** The journal steps recorded since the head checkpoint (the open end of the head's branch). */
  journal: string[]
  /** UTF-8 bytes of the head's whole branch journal: its path from the root, and `journal`. */
  journalBytes: number
  /** Kept (restorable) checkpoints of every branch, oldest first. */
  checkpoints: Checkpoint[]
  /**
   * Every node of the checkpoint tree, kept ones and the bare ones (pruned, but a kept checkpoint descends
   * from them): each holds its own part of the branch journal, shared by all its descendants.
   */
  nodes: Map<string, TreeNode>
  /** Ids of checkpoints pruned away, newest last (at most MAX_PRUNED_IDS_REMEMBERED). */
  pruned: string[]
  /** Creation counter of the tree's checkpoints: retention keeps the newest. */
  sequence: number
  /** When the whole session expires (idle TTL), store clock. */
  expiresAt: number
  /** Listing score (last activity); `null` while not listed. */
  activity: number | null
  /** Listing tie-breaker, the same hash the Redis store uses. */
  member: string
}

/** One node of a session's checkpoint tree in the memory store. */
export interface TreeNode {
  id: string
  parentId: string | null
  turn: number
  /** Creation order within the session. */
  sequence: number
  /** Journal entries on the path from the root, this node's included. */
  journalLength: number
  /** UTF-8 bytes of those entries. */
  pathBytes: number
  /** The journal entries recorded since the parent: this node's part of every descendant's branch. */
  segment: string[]
  /** Restorable (false: pruned, kept only as the ancestor of a kept one). */
  kept: boolean
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
    head: null,
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

/** The head of a record: its `head`, or (a record without one) the newest kept checkpoint. */
export function headOfEntry(entry: Entry): string | null {
  if (entry.record?.head !== undefined) return entry.record.head
  return entry.checkpoints.at(-1)?.id ?? null
}

/** The journal entries of the branch ending at `id` (`null`: the root, none), in order. */
export function branchJournal(entry: Entry, id: string | null): string[] {
  const parts: string[][] = []
  for (let node = id === null ? undefined : entry.nodes.get(id); node; ) {
    parts.push(node.segment)
    node = node.parentId === null ? undefined : entry.nodes.get(node.parentId)
  }
  return parts.reverse().flat()
}

/**
 * Records a checkpoint as the session's new head (child of the current head), taken of `input.sandboxId`
 * at `createdAt`: the journal steps since the head become its part of the branch. Then applies retention
 * (the newest `keep` kept, the head always) and drops the nodes no kept one descends from. Returns the
 * checkpoint and the ones pruned (oldest first), or `undefined` when refused: the record no longer maps that
 * sandbox, or a restore (a higher mapping token) came after the turn began.
 */
export function recordCheckpoint(
  entry: Entry,
  input: CheckpointInput,
  turn: {
    fencingToken: number
    createdAt: number
    id: string
    turn: number
    manifest: SessionRecord['manifest']
    from: 'turn-end' | 'mid-turn'
  },
): { checkpoint: Checkpoint; pruned: Checkpoint[] } | undefined {
  const record = entry.record
  if (!record || turn.fencingToken < record.mappingToken || record.sandboxId !== input.sandboxId) {
    return undefined
  }
  const parentId = headOfEntry(entry)
  const parent = parentId === null ? undefined : entry.nodes.get(parentId)
  const journalLength = (parent?.journalLength ?? 0) + entry.journal.length
  entry.sequence += 1
  const checkpoint: Checkpoint = {
    id: turn.id,
    parentId: parent ? parent.id : null,
    turn: turn.turn,
    createdAt: turn.createdAt,
    sandboxId: input.sandboxId,
    snapshot: input.snapshot,
    journalLength,
    manifest: turn.manifest === null ? null : structuredClone(turn.manifest),
    from: turn.from,
    journalBytes: entry.journalBytes,
  }
  entry.nodes.set(checkpoint.id, {
    id: checkpoint.id,
    parentId: checkpoint.parentId,
    turn: checkpoint.turn,
    sequence: entry.sequence,
    journalLength,
    pathBytes: entry.journalBytes,
    segment: entry.journal,
    kept: true,
  })
  entry.journal = []
  entry.checkpoints.push(checkpoint)
  record.head = checkpoint.id
  return { checkpoint, pruned: applyRetention(entry, input.keep) }
}

/**
 * Keeps the newest `keep` checkpoints and the head; the others become bare nodes while a kept one descends
 * from them, and are dropped (remembered as pruned) once none does. Returns the checkpoints pruned now,
 * oldest first.
 */
function applyRetention(entry: Entry, keep: number): Checkpoint[] {
  const head = headOfEntry(entry)
  const newest = entry.checkpoints.slice(-keep)
  const kept = entry.checkpoints.filter((c) => newest.includes(c) || c.id === head)
  const pruned = entry.checkpoints.filter((c) => !kept.includes(c))
  entry.checkpoints = kept
  for (const checkpoint of pruned) entry.nodes.get(checkpoint.id)!.kept = false
  const needed = new Set<string>()
  for (const checkpoint of kept) {
    for (let id: string | null = checkpoint.id; id !== null && !needed.has(id); ) {
      needed.add(id)
      id = entry.nodes.get(id)?.parentId ?? null
    }
  }
  for (const id of [...entry.nodes.keys()]) {
    if (needed.has(id)) continue
    entry.nodes.delete(id)
    entry.pruned.push(id)
  }
  for (const checkpoint of pruned) if (entry.nodes.has(checkpoint.id)) entry.pruned.push(checkpoint.id)
  if (entry.pruned.length > MAX_PRUNED_IDS_REMEMBERED) {
    entry.pruned.splice(0, entry.pruned.length - MAX_PRUNED_IDS_REMEMBERED)
  }
  return pruned
}

/**
 * Where a restore goes, found on the tree: a checkpoint id (on any branch), or the head's ancestor at depth
 * `toTurn` (its deepest one of that turn: the turn's end rather than a mid-turn checkpoint). `null` = the
 * root; a string = why not (`'pruned'` or `'missing'`).
 */
export function findRestoreTarget(
  entry: Entry,
  target: { checkpoint: string | null } | { toTurn: number },
): Checkpoint | null | 'pruned' | 'missing' {
  const byId = (id: string) => entry.checkpoints.find((c) => c.id === id)
  if ('checkpoint' in target && target.checkpoint !== undefined) {
    if (target.checkpoint === null) return null
    const found = byId(target.checkpoint)
    if (found) return found
    return entry.nodes.has(target.checkpoint) || entry.pruned.includes(target.checkpoint)
      ? 'pruned'
      : 'missing'
  }
  const toTurn = (target as { toTurn: number }).toTurn
  if (toTurn === 0) return null
  for (let id = headOfEntry(entry); id !== null; ) {
    const node = entry.nodes.get(id)
    if (!node) break
    if (node.turn === toTurn) return byId(id) ?? 'pruned'
    if (node.turn < toTurn) break
    id = node.parentId
  }
  return 'missing'
}
