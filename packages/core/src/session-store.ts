import type { JournalEntry, JournalStep } from './journal.js'
import type { SnapshotKeeps } from './sandbox-provider.js'
import type { SessionKey } from './validation.js'

/** The schema version of {@link SessionRecord}s written by this version of sandkeep. */
export const SESSION_RECORD_SCHEMA_VERSION = 1

/** What sandkeep last knew of the sandbox's state. */
export type SessionSandboxState = 'running' | 'paused' | 'killed' | 'unknown'

/**
 * What the turn that ended last left behind, so the next turn can check what survived the pause.
 * Written at turn end by the session manager.
 */
export interface TurnManifest {
  /** When the manifest was written, epoch ms. */
  writtenAt: number
  /** The sandbox the manifest describes. */
  sandboxId: string
  /** One sentinel per interpreter context the turn used; `null` when no code ran in this sandbox. */
  memory: Array<{
    /** Interpreter language of the context. */
    language: string
    /** Context id, or `null` for the language's default context. */
    contextId: string | null
    /** Name of the global variable holding the sentinel. */
    variable: string
    /** The sentinel's value; a memory-keeping resume still has it. */
    value: string
  }> | null
  /** The marker file written at turn end; `null` when the filesystem probe is off. */
  filesystem: {
    /** Absolute path inside the sandbox. */
    path: string
    /** Its content. */
    value: string
    /**
     * Files sandkeep saw the conversation write in this sandbox (`writeFile` through the turn's handle, journal
     * file steps), newest first, at most `MAX_MANIFEST_WITNESSES` (8, `@sandkeep/core/store`): when the
     * marker is missing, one of them still there as written says the files were kept (code in the sandbox
     * removed only the marker). Absent when there are none, and in manifests written before this field.
     */
    witnesses?: FileWitness[]
  } | null
  /** Background processes running at turn end; `null` when the process probe is off or unsupported. */
  processes: Array<{
    /** Pid inside the sandbox. */
    pid: number
    /** The command line as started (for E2B: the `bash -l -c` argument). */
    command: string
    /** Working directory, when known. */
    cwd?: string
  }> | null
}

/** A file sandkeep saw written, as its manifest remembers it. */
export interface FileWitness {
  /** The path as written (relative paths are under the sandbox's home). */
  path: string
  /** SHA-256 of the content written, hex. */
  sha256: string
}

/** A platform snapshot a checkpoint (or a pending restore) refers to. */
export interface CheckpointSnapshot {
  /** The provider's snapshot id. */
  snapshotId: string
  /** What the provider said it keeps. */
  keeps: SnapshotKeeps
}

/**
 * The state of a session at the end of one of its turns, as a rewind or fork can restore it: a platform
 * snapshot where the provider has them, and always the journal's length (a fresh sandbox replays that much).
 * Written with the turn's release by the session manager's `checkpoints` option.
 */
export interface Checkpoint {
  /** The turn it was taken at the end of: the record's `turnCount` after that turn's release (1-based). */
  turn: number
  /** When it was taken, epoch ms on the store's clock (the release's `turnEndedAt`). */
  createdAt: number
  /** The sandbox it was taken of. */
  sandboxId: string
  /** The platform snapshot, or `null` when the provider has none (or taking it failed). */
  snapshot: CheckpointSnapshot | null
  /** Journal entries recorded up to that point: a restore replays the first `journalLength` entries. */
  journalLength: number
  /** The manifest the turn left (the record's after that release), for the probes after a restore. */
  manifest: TurnManifest | null
}

/** What a turn's release asks the store to record as a checkpoint (the store adds the turn and length). */
export interface CheckpointInput {
  /** The sandbox the snapshot is of: written only while the record still maps it, else refused. */
  sandboxId: string
  /** The snapshot taken, or `null` for a journal-position-only checkpoint. */
  snapshot: CheckpointSnapshot | null
  /** Checkpoints to keep, newest first, this one included (1 to 1000); older ones are pruned and returned. */
  keep: number
}

/**
 * A restore the session's next turn must carry out (set by a rewind or a fork, cleared by the next
 * `setSandbox`): that turn creates the sandbox from the snapshot, or fresh, and replays the journal.
 */
export interface SessionRestore {
  /** `'rewound'` by `rewind`, `'forked'` by `createFork`. */
  kind: 'rewound' | 'forked'
  /** The checkpoint's turn (0: the state before the first turn). */
  turn: number
  /** The snapshot to create from; `null` to start fresh and replay the journal. */
  snapshot: CheckpointSnapshot | null
  /** The sandbox the session mapped before the rewind, or the fork source's sandbox. */
  fromSandboxId: string | null
  /** For a fork: the source conversation. */
  fromConversationId?: string
  /** When it was asked for, epoch ms on the store's clock. */
  at: number
}

/** One session: a conversation mapped to a sandbox. Stored as JSON with a schema version. */
export interface SessionRecord {
  /** Always {@link SESSION_RECORD_SCHEMA_VERSION} for records this version writes. */
  schemaVersion: 1
  /** Tenant the session belongs to. */
  tenant: string
  /** The raw conversation id (keys only hold a hash of it). */
  conversationId: string
  /** The sandbox that holds this conversation's state; `null` before the first creation finished. */
  sandboxId: string | null
  /** `SandboxProvider.providerId` of the provider that created the sandbox. */
  providerId: string | null
  /** Template the sandbox was created from, when known. */
  template: string | null
  /** When the session was first recorded, epoch ms. */
  createdAt: number
  /** When the record last changed, epoch ms. */
  updatedAt: number
  /** When the latest turn started, epoch ms; `null` before the first turn. */
  lastTurnStartedAt: number | null
  /** When the latest turn ended, epoch ms; `null` before the first turn ended. */
  lastTurnEndedAt: number | null
  /** Number of turns that ended. */
  turnCount: number
  /** Seconds the sandbox ran during turns (begin to end), summed over turns. */
  runningSeconds: number
  /** Seconds the sandbox spent paused between turns, summed. */
  pausedSeconds: number
  /** What sandkeep last knew of the sandbox's state. */
  state: SessionSandboxState
  /** When the sandbox was last paused (or left to auto-pause), epoch ms; `null` when running or never paused. */
  pausedAt: number | null
  /** Fencing token of the holder that last wrote `sandboxId`; writes with a lower token are refused. */
  mappingToken: number
  /** What the latest turn left behind; `null` before the first turn ended. */
  manifest: TurnManifest | null
  /**
   * Whether the latest turn that released its lease used the sandbox (ran something in it, not only resumed
   * it); `null` when no turn said (before the first one ended, or a record written before this field).
   * The manager's `prewarm: 'auto'` resumes early when it is true.
   */
  lastTurnUsedSandbox: boolean | null
  /**
   * A rewind or fork the next turn carries out; `null` when none is pending (and in records written before
   * this field). While set, `sandboxId` is `null`.
   */
  restore: SessionRestore | null
  /** Free-form, JSON-safe data for integrations (never secrets). */
  extra?: Record<string, unknown>
}

/** A holder's right to use a session for a while. Renew it before `expiresAt` for long turns. */
export interface Lease {
  /** Unique id of the holder (one per turn). */
  holderId: string
  /** Monotonically increasing per session; a higher token supersedes a lower one for mapping writes. */
  fencingToken: number
  /**
   * When the lease lapses unless renewed, epoch ms on the store's clock: exactly the store's now + `leaseMs`
   * at the `acquire` or `renew` that granted it, so a holder can read the store's time from it without a
   * round trip of its own (the session manager dates a turn's events on the store's clock this way).
   */
  expiresAt: number
}

/** Answer of {@link SessionStore.acquire}. */
export interface AcquireResult {
  /** The lease taken. */
  lease: Lease
  /** The record as it was when the lease was taken; `null` when the session is new. */
  record: SessionRecord | null
  /**
   * True when this holder must create the sandbox (no sandbox mapped and no live creation claim): it holds
   * the creation claim until it calls `setSandbox` or its lease lapses. False when a sandbox is mapped, or
   * when another holder is creating it (then `record?.sandboxId` is null: wait with `claimCreation`).
   */
  create: boolean
  /** Live holders after this one joined, this one included. */
  holders: number
}

/** Answer of {@link SessionStore.claimCreation}. */
export interface ClaimResult {
  /** The record now; when it has a `sandboxId`, use it. */
  record: SessionRecord | null
  /** True when this holder now holds the creation claim (the previous claimant's lease lapsed). */
  create: boolean
}

/** Fields written when a holder maps (or re-maps) the session to a sandbox. */
export interface SetSandboxInput {
  /** The new sandbox id. */
  sandboxId: string
  /**
   * The id the holder believes is mapped now (`null` for a first creation). When the store holds another id
   * the write is refused with LEASE_LOST: someone else changed the mapping first.
   */
  expectedSandboxId: string | null
  /** Provider that owns the sandbox. */
  providerId: string
  /** Template it was created from. */
  template?: string | null
  /** State to record, default `'running'`. */
  state?: SessionSandboxState
  /** Session TTL to set, ms; default the store's `ttlMs`. */
  ttlMs?: number
}

/** What a holder writes as it releases its lease at turn end (one round trip with the release). */
export interface ReleaseInput {
  /** The manifest of what this turn left behind; omitted = keep the stored one. */
  manifest?: TurnManifest | null
  /**
   * Write `manifest` only if the record's `turnCount` still equals this number, i.e. no other turn ended
   * since this one began (its `acquire` returned that count); otherwise keep the stored manifest. For a
   * manifest built partly from what the turn saw at its start (the process list), which another turn's end
   * in between would make stale. Omitted = no condition.
   */
  manifestIfTurnCount?: number
  /** When the turn ended, epoch ms. */
  turnEndedAt: number
  /** Seconds to add to `runningSeconds` as is (for a caller that does its own accounting). */
  runningSeconds?: number
  /**
   * When this turn started the sandbox running (its create or resume call), epoch ms; omitted when it never
   * did. The store counts the sandbox's running time once for overlapping turns: the last holder adds the
   * time from the earliest `runningFrom` of the turns that overlapped to its own `turnEndedAt` (the sandbox
   * runs in between, also when earlier holders left it running for the later ones).
   */
  runningFrom?: number
  /** Seconds to add to `pausedSeconds` (the pause that preceded this turn). */
  pausedSeconds?: number
  /**
   * State to record only if this holder turns out to be the last live holder (it is the one that pauses);
   * with `pausedAt` set when the state is `'paused'`. Omitted = leave the state.
   */
  stateIfLast?: SessionSandboxState
  /** Written to the record's `lastTurnUsedSandbox`; omitted = leave it. */
  usedSandbox?: boolean
  /**
   * When this holder turns out to be the last live one, keep its lease instead of removing it (the release
   * is otherwise done: counters, manifest, `stateIfLast`): the session stays held while the caller pauses
   * the sandbox, `acquire` refuses other holders with SESSION_BUSY meanwhile, and `releaseHold` (or the
   * lease lapsing, as the caller stops renewing it) lets them in. Ignored when not last.
   */
  holdIfLast?: boolean
  /**
   * Record a checkpoint of this turn's end (after the counters and manifest are written: its `turn` is the
   * new `turnCount`, its `manifest` the record's, its `journalLength` the journal's). Refused, and said in
   * `checkpointRefused`, when the lease's fencing token is below the record's `mappingToken` (a rewind came
   * after this turn began) or the record no longer maps `checkpoint.sandboxId`.
   */
  checkpoint?: CheckpointInput
  /** Session TTL to set, ms; default the store's `ttlMs`. */
  ttlMs?: number
}

/** Answer of {@link SessionStore.release}. */
export interface ReleaseResult {
  /** True when no live holder remains: the caller is the one that pauses (or kills, or keeps). */
  last: boolean
  /** The record after the write; `null` when the session was deleted meanwhile. */
  record: SessionRecord | null
  /**
   * True when `holdIfLast` kept the caller's lease: it must call `releaseHold` once its pause is done.
   * Omitted otherwise.
   */
  held?: boolean
  /** The checkpoint recorded, when `checkpoint` was given and not refused. */
  checkpoint?: Checkpoint
  /** True when `checkpoint` was given and refused (the caller deletes its snapshot). */
  checkpointRefused?: boolean
  /** Checkpoints pruned past `keep` (oldest first): the caller deletes their snapshots on the platform. */
  prunedCheckpoints?: Checkpoint[]
}

/** What {@link SessionStore.rewind} sets the session back to. */
export interface RewindInput {
  /** The turn whose checkpoint the session goes back to; 0 = before the first turn (always possible). */
  toTurn: number
  /** The sandbox the caller saw mapped (`null` for none): another is refused with LEASE_LOST. */
  expectedSandboxId: string | null
  /** Session TTL to set, ms; default the store's `ttlMs`. */
  ttlMs?: number
}

/** Answer of {@link SessionStore.rewind}. */
export interface RewindResult {
  /** The record after the rewind: `sandboxId` null, `restore` set, `turnCount` = `toTurn`. */
  record: SessionRecord
  /** The checkpoint gone back to; `null` for turn 0. */
  checkpoint: Checkpoint | null
  /** Checkpoints after `toTurn`, dropped (oldest first): the caller deletes their snapshots. */
  dropped: Checkpoint[]
}

/** What {@link SessionStore.createFork} writes for the new session. */
export interface CreateForkInput {
  /** The source session's conversation id (same tenant). */
  fromConversationId: string
  /** The source's sandbox when the fork was made. */
  fromSandboxId: string | null
  /** The checkpoint forked from: its turn, snapshot and manifest become the new session's. */
  checkpoint: Pick<Checkpoint, 'turn' | 'snapshot' | 'manifest'>
  /** The source journal's first `checkpoint.journalLength` steps, in order: the new session's journal. */
  journal: JournalStep[]
  /** The provider of the source session. */
  providerId: string | null
  /** The template of the source session. */
  template: string | null
  /** Session TTL, ms; default the store's `ttlMs`. */
  ttlMs?: number
}

/** One page of {@link SessionStore.list}. */
export interface SessionPage {
  /** Sessions, most recently active first. */
  sessions: SessionRecord[]
  /** Pass back to get the next page; `undefined` on the last page. */
  cursor?: string
}

/**
 * Where a conversation finds its sandbox. Implementations: `createMemorySessionStore` (one process) and
 * `createRedisSessionStore` (`@sandkeep/redis`). Run `sessionStoreConformance` from `@sandkeep/core/test`
 * against any new implementation. All methods validate their inputs before any I/O and throw
 * `SandkeepError` INVALID_ARGUMENT on bad input, STORE_UNAVAILABLE when the backend cannot be reached in a
 * bounded time, and STORE_CORRUPT (naming the key) when a stored record does not parse.
 */
export interface SessionStore {
  /** Contract version. */
  readonly specificationVersion: 'v1'
  /** Short name of the backend, e.g. `'memory'` or `'redis'`. */
  readonly storeId: string
  /**
   * Begins a turn in one atomic step: prunes lapsed holders, adds this holder with a lease of `leaseMs`,
   * issues the next fencing token, reads the record, and grants the creation claim when no sandbox is mapped
   * and no live holder holds the claim. Refreshes the session TTL.
   * @throws SandkeepError SESSION_BUSY (retryable, `retryAfterMs` = the hold's remaining lease) while another
   *   holder's release holds the session (`holdIfLast`: its sandbox is being paused); nothing is written
   */
  acquire(
    key: SessionKey,
    options: { holderId: string; leaseMs: number; ttlMs?: number },
  ): Promise<AcquireResult>
  /**
   * Extends a live lease to now + `leaseMs`, and refreshes the session TTL (`ttlMs`, default the store's,
   * never shorter than the lease).
   * @throws SandkeepError LEASE_LOST when the lease lapsed or the holder was removed.
   */
  renew(key: SessionKey, lease: Lease, options: { leaseMs: number; ttlMs?: number }): Promise<Lease>
  /**
   * For a holder waiting on another's creation: returns the mapping when it exists, or hands this holder the
   * claim when the claimant's lease lapsed. Callers poll it with backoff and jitter, bounded.
   * @throws SandkeepError LEASE_LOST when this holder's own lease lapsed.
   */
  claimCreation(key: SessionKey, lease: Lease): Promise<ClaimResult>
  /**
   * Compare-and-set of the mapping, fenced: refused unless the lease is live, its token is at least the
   * record's `mappingToken`, and the stored sandbox id equals `expectedSandboxId`. Creates the record on
   * first creation and releases the creation claim. Clears a pending `restore` (the new sandbox carried it out).
   * @throws SandkeepError LEASE_LOST when refused.
   */
  setSandbox(key: SessionKey, lease: Lease, input: SetSandboxInput): Promise<SessionRecord>
  /**
   * Ends a holder's turn in one atomic step: removes the holder, writes the manifest and counters, refreshes
   * the TTL, and tells whether it was the last live holder. Releasing a lapsed lease still writes the
   * counters (the turn did happen) and reports `last` from the live holders, except for a turn a pending
   * rewind discarded (its token below the record's `mappingToken` while `restore` is set): that one adds no
   * turn to `turnCount` and applies no `stateIfLast`.
   */
  release(key: SessionKey, lease: Lease, input: ReleaseInput): Promise<ReleaseResult>
  /**
   * Ends the hold a `release` with `holdIfLast` kept: removes the holder, so other turns may begin. A no-op
   * when the hold already lapsed or ended. Optional: a store without holds never answers `held`, and the
   * manager then pauses after a plain release.
   */
  releaseHold?(key: SessionKey, lease: Lease): Promise<void>
  /**
   * Updates the recorded sandbox state (after a pause that happened outside `release`, or a failed one) and
   * refreshes the session TTL (`ttlMs`, default the store's).
   */
  setState(
    key: SessionKey,
    state: SessionSandboxState,
    options?: { at?: number; ttlMs?: number },
  ): Promise<SessionRecord | null>
  /** Reads a record; `null` when there is none. */
  get(key: SessionKey): Promise<SessionRecord | null>
  /** Deletes the record, its leases, its journal and its checkpoints. Returns false when there was nothing to delete. */
  delete(key: SessionKey): Promise<boolean>
  /** Sessions of one tenant, most recently active first, paged. `limit` default 50, at most 1000. */
  list(tenant: string, options?: { limit?: number; cursor?: string }): Promise<SessionPage>
  /**
   * Appends a setup step to the session's journal and refreshes the session TTL (`ttlMs`, default the
   * store's).
   * @throws SandkeepError JOURNAL_FULL past the store's step-count or byte limit (the step is not stored).
   */
  appendJournal(key: SessionKey, step: JournalStep, options?: { ttlMs?: number }): Promise<void>
  /** The journal in recording order. */
  readJournal(key: SessionKey): Promise<JournalEntry[]>
  /** Empties the journal. */
  clearJournal(key: SessionKey): Promise<void>
  /**
   * The store's clock, epoch ms: the clock its leases and timestamps use (Redis: the server's `TIME`; the
   * memory store: its `now` option). Optional: the session manager makes age decisions (gc's grace for a
   * sandbox being created) on it, shared by every process, rather than on one process's clock, and falls
   * back to its own clock without it.
   * @throws SandkeepError STORE_UNAVAILABLE, as every method
   */
  now?(): Promise<number>
  /**
   * The session's checkpoints, oldest first (empty when none). Optional, with `rewind` and `createFork`: the
   * session manager's `checkpoints` option needs all three (and `release`'s `checkpoint`).
   */
  readCheckpoints?(key: SessionKey): Promise<Checkpoint[]>
  /**
   * Sets the session back to the end of turn `toTurn` in one atomic step, without a lease of the caller's:
   * refused with SESSION_BUSY (retryable, `retryAfterMs` = the longest remaining lease) while any live holder
   * or hold exists (a running turn, a pause), with LEASE_LOST when the record does not map
   * `expectedSandboxId`, and with CHECKPOINT_NOT_FOUND when `toTurn` is neither 0 nor the turn of a kept
   * checkpoint (nothing is written in each case). Takes the next fencing token (as `acquire` would) and sets
   * `mappingToken` to it, so a turn that began before and lost its lease can neither map a sandbox nor record
   * a checkpoint after the rewind. Truncates the journal (and its byte count) to the checkpoint's
   * `journalLength`, drops later checkpoints, sets `turnCount` to `toTurn`, `manifest` to the checkpoint's,
   * `sandboxId` to null, `state` to `'unknown'`, `pausedAt` to null and `restore` to the pending rewind
   * (`fromSandboxId` = the sandbox mapped before). Refreshes the TTL.
   */
  rewind?(key: SessionKey, input: RewindInput): Promise<RewindResult>
  /**
   * Creates a new session from a checkpoint of another (the fork's first turn restores it), atomically:
   * refused with SESSION_EXISTS, writing nothing, when `key` already has a record or live holders.
   */
  createFork?(key: SessionKey, input: CreateForkInput): Promise<SessionRecord>
  /** Releases connections. Further calls throw. */
  close(): Promise<void>
}
