import type { TelemetryOption } from '../telemetry/api.js'
import type { HealthCheck } from './health.js'
import type { JournalStep } from './journal.js'
import type { SandkeepLogger } from './logger-types.js'
import type { JournalOnlyCheckpoint, ResumeReport, TurnEndReport } from './report.js'
import type {
  SandboxCreateNetwork,
  SandboxHandle,
  SandboxLifecycle,
  SandboxProvider,
} from './sandbox-provider.js'
import type { Checkpoint, CheckpointTree, SessionPage, SessionRecord, SessionStore } from './session-store.js'

/** What happens to the sandbox when the last turn holding it ends. */
export type OnTurnEnd = 'pause' | 'auto-pause' | 'keep' | 'kill'

/**
 * Per-turn checkpoints (`SessionManagerOptions.checkpoints`): at each turn end a platform snapshot (where the
 * provider has snapshots) and the journal's position, so `rewind` and `fork` can go back to any kept turn.
 */
export interface CheckpointsOption {
  /** When to take one: at the end of every turn. */
  every: 'turn'
  /**
   * Retention over the session's checkpoint tree: the newest `keep` checkpoints of all branches, plus the
   * head (so the state the next turn continues from is always restorable). Older ones are pruned: their
   * snapshots are deleted unless a kept checkpoint uses the same one, and they can no longer be restored
   * (CHECKPOINT_NOT_FOUND says they were pruned); one a kept checkpoint descends from stays as a bare node
   * of the tree so the kept branch's journal stays whole. Default 10, 1 to 1000.
   */
  keep?: number
  /**
   * Per-tenant limits over all of a tenant's sessions, checked in this manager before a turn end's (or
   * `turn.checkpoint()`'s) snapshot is taken: at a limit, the checkpoint is recorded without a snapshot
   * (journal only: restoring it replays the branch's journal), the turn end's report says which limit
   * (`journalOnly`), and an `error` event of phase `checkpoint-limit` carries a QUOTA_EXCEEDED error naming
   * the tenant and the limit. Read from the tenant's snapshot ledger in the store (one read per checkpoint,
   * whatever the tenant's number of sessions): every snapshot sandkeep took for the tenant and has not
   * deleted yet, a shared one (forks, unchanged turns) once. Needs a store with the ledger (memory, Redis);
   * snapshots taken before the ledger existed are not in it.
   */
  tenantLimits?: {
    /** Most checkpoint snapshots per tenant (distinct snapshots of all its sessions). */
    snapshots?: number
    /**
     * Most bytes a tenant's checkpoint snapshots may add up to, as the provider reports each snapshot's
     * size (`createSnapshot`'s `bytes`: on a local-e2b host what the snapshot added to the host's disk,
     * content shared with earlier snapshots counted once, by the snapshot that stored it). A snapshot that
     * takes the tenant past it is deleted at once and the checkpoint recorded journal-only. E2B does not say
     * a snapshot's size: its snapshots count 0 here, so bound them with `snapshots`.
     */
    maxSnapshotBytes?: number
  }
}

/** Options of `restore`. */
export interface RestoreOptions {
  /** The checkpoint id to restore, of any branch of the conversation; `null` = the root (before the first turn). */
  checkpoint: string | null
  /** Tenant; default `'default'`. */
  tenant?: string
  /** Aborts the wait for the session and the store calls. */
  abortSignal?: AbortSignal
}

/** What `restore` (and `rewind`) did. */
export interface RestoreResult {
  /** The checkpoint restored (the session's head now); `null` for the root. */
  checkpoint: Checkpoint | null
  /** How the next turn will restore it: from the checkpoint's snapshot, or a fresh sandbox and its branch's journal. */
  source: 'snapshot' | 'journal'
  /** The sandbox that was mapped before and was killed (`null` when none was mapped). */
  killedSandboxId: string | null
  /** The restored checkpoint's depth (0 for the root). */
  toTurn: number
  /** Always empty: a restore deletes nothing (kept from rewind's result for compatibility). */
  droppedTurns: number[]
}

/** Options of `rewind`. */
export interface RewindOptions {
  /** The turn whose end the next turn starts from; 0 = before the first turn. */
  toTurn: number
  /** Tenant; default `'default'`. */
  tenant?: string
  /** Aborts the wait for the session and the store calls. */
  abortSignal?: AbortSignal
}

/** What `rewind` did: the same as `restore`. */
export type RewindResultReport = RestoreResult

/** Options of `fork`. */
export interface ForkOptions {
  /**
   * The checkpoint id the fork starts from, of any branch of the source; `null` = the root. Default: the
   * source's head. Takes precedence over `atTurn`.
   */
  checkpoint?: string | null
  /** The head's ancestor at this depth (0 = the root); used when `checkpoint` is absent. */
  atTurn?: number
  /** Tenant of both sessions (a fork never crosses tenants); default `'default'`. */
  tenant?: string
  /** Aborts the call. */
  abortSignal?: AbortSignal
}

/** What `fork` did. */
export interface ForkResult {
  /** The new conversation's id. */
  conversationId: string
  /** The source turn it starts from. */
  atTurn: number
  /** The source checkpoint it starts from; `null` = the root. */
  checkpoint: Checkpoint | null
  /** How its first turn will restore it. */
  source: 'snapshot' | 'journal'
  /** The new session's record (no sandbox yet: its first turn makes one). */
  record: SessionRecord
}

/** Options of `createSessionManager`. */
export interface SessionManagerOptions {
  /** Where sessions are kept. */
  store: SessionStore
  /** The sandbox platform. */
  provider: SandboxProvider
  /** Default `'pause'`. `'auto-pause'` needs `provider.setTimeout`; `'pause'` needs `provider.pause`. */
  onTurnEnd?: OnTurnEnd
  /** With `'auto-pause'`: idle time before the platform pauses the sandbox, ms. Default 60 000. */
  idleTimeoutMs?: number
  /** Sandbox creation settings. */
  sandbox?: {
    /** Template; default the provider's. */
    template?: string
    /** Sandbox timeout, ms; default 600 000 (must cover the longest turn). */
    timeoutMs?: number
    /** Extra metadata (sandkeep's own keys are added; never put secrets here). */
    metadata?: Record<string, string>
    /** Environment variables. */
    envs?: Record<string, string>
    /** Outbound internet. Default false. */
    allowInternetAccess?: boolean
    /**
     * What the platform does when the sandbox's timeout passes. Default, when the provider honours it
     * (`createCapabilities` has `'lifecycle'`): `{ onTimeout: 'pause' }` unless `onTurnEnd` is `'kill'`
     * (`{ onTimeout: 'pause', autoResume: true }` with `'auto-pause'`), so a process that crashed or a
     * serverless function cut short before its turn end paused the sandbox loses nothing but the running
     * time until the timeout; with `'kill'` the platform's default (kill) stays. CAPABILITY_UNSUPPORTED when
     * given and the provider does not honour it.
     */
    lifecycle?: SandboxLifecycle
    /**
     * Ingress and egress fixed at creation (`allowPublicTraffic`, `allowOut`, `denyOut`, `maskRequestHost`).
     * CAPABILITY_UNSUPPORTED when the provider does not honour it.
     */
    network?: SandboxCreateNetwork
    /** envd only with the sandbox's access token. CAPABILITY_UNSUPPORTED when the provider does not honour it. */
    secure?: boolean
  }
  /** Declared probes run after every resume. */
  healthChecks?: HealthCheck[]
  /**
   * Per-turn checkpoints for `rewind` and `fork`. Off by default (`false`). Needs a store with checkpoints
   * (memory and Redis have them); with a provider without snapshots a checkpoint is the journal's position
   * alone (no provider call).
   */
  checkpoints?: CheckpointsOption | false
  /** Built-in fidelity probes (memory sentinel, marker file, process list). Default true. */
  fidelityProbes?: boolean
  /**
   * @deprecated Has no effect: the connect always follows the lease. Starting it while the lease was taken
   * saved nothing measurable at a network distance (docs/benchmarks.md, "The speculative connect"). Still a
   * boolean, checked as before.
   */
  speculativeConnect?: boolean
  /** Runs on every fresh sandbox (created or recreated), before the journal replay. */
  bootstrap?: JournalStep[] | ((sandbox: SandboxHandle) => Promise<void>)
  /** `'journal'`: replay recorded steps after a recreate or a detected memory loss. Default `'journal'`. */
  rehydrate?: 'journal' | 'none'
  /** Lease length, ms; renewed at a third of it while the turn runs. Default 30 000. */
  leaseMs?: number
  /** Session TTL in the store, ms. Default 30 days. */
  ttlMs?: number
  /**
   * How long a turn waits for another turn of the same session: its creation of the sandbox, or the pause
   * at its end (the next turn never uses a sandbox that is being paused), ms. Default 60 000.
   */
  createWaitMs?: number
  /** Retries of transient provider failures. Default `{ retries: 4, minTimeoutMs: 100, maxTimeoutMs: 3000 }`. */
  retry?: { retries?: number; minTimeoutMs?: number; maxTimeoutMs?: number }
  /**
   * OpenTelemetry spans and metrics (see the README's Telemetry section). Default: the global tracer and
   * meter of `@opentelemetry/api` when it is installed, nothing otherwise; `false` turns them off.
   */
  telemetry?: TelemetryOption
  /**
   * Where the turn lifecycle is logged (begin, resume outcome, repairs, journal replays, end, pause, errors),
   * with structured fields: ids, outcomes, counts and durations, never a secret (no API key, token, env
   * value, file content or code). An object with any of `debug`, `info`, `warn`, `error` (`console`, pino,
   * winston). Default: silent.
   */
  logger?: SandkeepLogger
  /** Shortcut: log to `console` from level debug when no `logger` is given. Default false. */
  debug?: boolean
}

/** Options of `sessions.close()`. */
export interface CloseOptions {
  /**
   * Longest wait, ms, for what is under way (calls in flight, turns not yet ended, turn ends pausing or
   * taking a checkpoint) before closing anyway. Default 60 000.
   */
  timeoutMs?: number
  /**
   * Leave the store open (it is shared with another manager or closed by the app). Default false: the store
   * given to createSessionManager is closed, so a script exits once its last turn ended.
   */
  keepStore?: boolean
}

/** What `sessions.close()` did. */
export interface CloseResult {
  /** Everything under way ended before the timeout. */
  drained: boolean
  /** Turns still open when it closed (begun, not ended: their `end()` may then fail on the closed store). */
  openTurns: number
  /** The store was closed (false with `keepStore`, or when its close failed: see the log). */
  storeClosed: boolean
  /** How long the close took, ms. */
  ms: number
}

/** Options of `beginTurn` and `withTurn`. */
export interface TurnOptions {
  /** Tenant; default `'default'`. */
  tenant?: string
  /** Aborts resume and the turn's sandbox calls. */
  abortSignal?: AbortSignal
  /** When true, the sandbox is resumed on first use; a turn that never uses it makes no provider call. */
  lazy?: boolean
  /**
   * Resume in the background as soon as the lease is taken, while the caller does something else (the model
   * thinks): `true`, or `'auto'` when the session's previous turn used the sandbox (the record's
   * `lastTurnUsedSandbox`). `beginTurn` then resolves once the lease is taken, as a lazy turn's does; the
   * sandbox's calls and `ready()` wait for the resume. A prewarmed turn that never uses the sandbox is ended
   * like any other (paused again). Default false.
   */
  prewarm?: boolean | 'auto'
}

/** A turn's journal. */
export interface TurnJournal {
  /** Records a setup step for rehydration (after it ran successfully). */
  record(step: JournalStep): Promise<void>
  /** The steps recorded so far in this session. */
  list(): Promise<JournalStep[]>
}

/** One turn of a conversation: holds the session's lease until `end()`. */
export interface Turn extends AsyncDisposable {
  /** Conversation id. */
  readonly conversationId: string
  /** Tenant. */
  readonly tenant: string
  /**
   * The sandbox. In a lazy turn the first call on it resumes the sandbox. Throws TURN_ENDED after `end()`.
   */
  readonly sandbox: SandboxHandle
  /** What the resume found; `undefined` while a lazy turn has not touched its sandbox. */
  readonly report: ResumeReport | undefined
  /** Resumes now (no-op when done) and returns the ready sandbox. */
  ready(): Promise<SandboxHandle>
  /** True once the sandbox was resumed in this turn. */
  readonly started: boolean
  /** Setup steps for rehydration. */
  readonly journal: TurnJournal
  /** Fires when the turn ends or its abort signal fires. */
  readonly signal: AbortSignal
  /** Ends the turn: manifest, lease release, then pause/keep/kill as configured. Idempotent. */
  end(): Promise<TurnEndReport>
  /** The end report once ended. */
  readonly endReport: TurnEndReport | undefined
  /**
   * Settles once `end()` has released the lease, before the pause: with the checkpoint the release recorded,
   * or `undefined` (checkpoints off, the checkpoint refused, the release failed). For a reply that carries
   * the checkpoint without waiting for the pause. Never rejects; pending until `end()` is called.
   */
  readonly checkpointed: Promise<Checkpoint | undefined>
  /**
   * Takes a checkpoint now, while the turn goes on (for loops that checkpoint per step): a snapshot of the
   * sandbox where the provider has them, and the journal so far. It becomes the session's head; the turn's
   * end checkpoint (when checkpoints are on) is its child. Resumes a lazy turn first.
   * @throws SandkeepError CAPABILITY_UNSUPPORTED (checkpoints off, or a store without them), LEASE_LOST,
   *   TURN_ENDED
   */
  checkpoint(): Promise<MidTurnCheckpoint>
}

/** What `turn.checkpoint()` recorded. */
export type MidTurnCheckpoint = Checkpoint & {
  /**
   * Set when the checkpoint was recorded without a snapshot because of a limit (the tenant's snapshot count or
   * bytes, or the platform's full quota): which one, and what to tell the tenant. A restore to it replays the
   * branch's journal.
   */
  journalOnly?: JournalOnlyCheckpoint
}

/** Events emitted by the session manager, with their payloads. */
export interface SessionManagerEvents {
  'turn-start': { conversationId: string; tenant: string; holderId: string; lazy: boolean; prewarm: boolean }
  'resume-end': { conversationId: string; tenant: string; report: ResumeReport }
  'health-check': {
    conversationId: string
    tenant: string
    sandboxId: string
    result: import('./health.js').HealthCheckResult
  }
  rehydrate: {
    conversationId: string
    tenant: string
    sandboxId: string
    /** Steps that replayed successfully. */
    steps: number
    /** Steps that failed (the others still ran); the `error` event of phase `rehydrate` says which. */
    failed: number
    ms: number
    /**
     * Why the journal was replayed: a fresh sandbox, a resume that lost memory (or, rarely, only files), or
     * the first turn after a rewind or fork (a fresh sandbox, or a snapshot's without memory).
     */
    reason: 'created' | 'recreated' | 'memory-lost' | 'filesystem-lost' | 'rewound' | 'forked'
    /** Files kept as the sandbox had them instead of written from the journal (see `ResumeReport.keptFiles`). */
    keptFiles?: string[]
  }
  'turn-end': { conversationId: string; tenant: string; report: ResumeReport | undefined; end: TurnEndReport }
  'pause-end': {
    conversationId: string
    tenant: string
    sandboxId: string
    action: TurnEndReport['action']
    ms: number
  }
  error: { conversationId?: string; tenant?: string; error: unknown; phase: string }
  /**
   * A session this process had used was missing from the store (a store that restarted empty, an expiry):
   * its journal and manifest are gone. `sandboxId` is the sandbox it mapped to, `adopted` whether the turn
   * took that sandbox over (its files and memory kept) rather than creating a new one.
   */
  'session-lost': { conversationId: string; tenant: string; sandboxId: string; adopted: boolean }
}

/** Options of `gc`. */
export interface GcOptions {
  /** Only this tenant; default every tenant that has sandkeep sandboxes, plus `default`. */
  tenant?: string
  /** Report what would be done, do nothing. Default false. */
  dryRun?: boolean
  /**
   * Delete the sessions whose sandbox is gone, with their journals (as `endSession` does), instead of keeping
   * them to their TTL. A later turn of such a conversation starts as a new one: nothing is left to tell it
   * that it had state. Default false.
   */
  deleteSessions?: boolean
}

/** Result of `gc`. */
export interface GcResult {
  /** Sandboxes killed because no session maps to them. */
  killedSandboxes: string[]
  /**
   * Sessions whose sandbox is gone, kept with their journal until their TTL: the next turn of each recreates
   * the sandbox, replays the journal and says `stateLost`. Empty with `deleteSessions`.
   */
  keptSessions: Array<{ tenant: string; conversationId: string }>
  /** Sessions whose sandbox is gone, deleted because `deleteSessions` asked for it. */
  deletedSessions: Array<{ tenant: string; conversationId: string }>
  /** Checkpoint snapshots deleted because no kept checkpoint refers to them (a crash between taking and recording). */
  deletedSnapshots: string[]
}

/** Keeps conversations' sandboxes across turns. Made by `createSessionManager`. */
export interface SessionManager {
  /** Begins a turn. Throws INVALID_ARGUMENT before any I/O on bad ids. */
  beginTurn(conversationId: string, options?: TurnOptions): Promise<Turn>
  /** Runs `fn` inside a turn and ends the turn even when `fn` throws (then rethrows). */
  withTurn<T>(conversationId: string, fn: (turn: Turn) => Promise<T>, options?: TurnOptions): Promise<T>
  /** Kills the session's sandbox and deletes the session. Returns false when there was none. */
  endSession(conversationId: string, options?: { tenant?: string }): Promise<boolean>
  /** Reads a session's record. */
  getSession(conversationId: string, options?: { tenant?: string }): Promise<SessionRecord | null>
  /** Lists a tenant's sessions, most recent first. */
  listSessions(options?: { tenant?: string; limit?: number; cursor?: string }): Promise<SessionPage>
  /**
   * Kills orphaned sandboxes, and reports the sessions whose sandbox is gone: kept for their next turn, or
   * deleted with `deleteSessions`.
   */
  gc(options?: GcOptions): Promise<GcResult>
  /**
   * `restore` to the head's ancestor at depth `toTurn` (0 = the root): its next turn starts from that
   * checkpoint. Deletes nothing: the later checkpoints stay on their branch and can be restored again.
   * @throws SandkeepError CHECKPOINT_NOT_FOUND (no checkpoint at that depth on the head's path: pruned,
   *   never taken, deeper than the head), INVALID_ARGUMENT, SESSION_BUSY, before any side effect
   */
  rewind(conversationId: string, options: RewindOptions): Promise<RewindResultReport>
  /**
   * Moves the session's head to a checkpoint of any of its branches (or the root): its next turn builds its
   * sandbox from that checkpoint (its snapshot, or a fresh sandbox with that branch's journal replayed); every
   * other branch stays as it is, and nothing is deleted. The mapped sandbox is killed once the store holds
   * the restored session (and, with the Redis store's `durability`, its replicas acknowledged it).
   * @throws SandkeepError CHECKPOINT_NOT_FOUND (not a kept checkpoint of this conversation and tenant:
   *   unknown, another conversation's, or pruned, which the message says), INVALID_ARGUMENT, SESSION_BUSY,
   *   before any side effect
   */
  restore(conversationId: string, options: RestoreOptions): Promise<RestoreResult>
  /**
   * Starts `newConversationId` from a checkpoint of `conversationId` (the latest by default): its first turn
   * gets its own sandbox from that checkpoint and its own copy of the journal; the source is not touched.
   * @throws SandkeepError SESSION_EXISTS (the new id has a session), CHECKPOINT_NOT_FOUND, INVALID_ARGUMENT
   */
  fork(conversationId: string, newConversationId: string, options?: ForkOptions): Promise<ForkResult>
  /** The session's checkpoint tree: its head and kept checkpoints, newest first (none without the `checkpoints` option). */
  listCheckpoints(conversationId: string, options?: { tenant?: string }): Promise<CheckpointTree>
  /** Subscribes to an event; returns the unsubscribe function. */
  on<E extends keyof SessionManagerEvents>(
    event: E,
    listener: (payload: SessionManagerEvents[E]) => void,
  ): () => void
  /**
   * Shuts the manager down: refuses new calls at once (MANAGER_CLOSED), waits for calls in flight, open turns
   * and turn ends under way (pauses, checkpoints) up to `timeoutMs`, then closes the store unless
   * `keepStore`. Calling it again returns the same result. A turn already begun may still `end()`.
   */
  close(options?: CloseOptions): Promise<CloseResult>
  /** The store. */
  readonly store: SessionStore
  /** The provider. */
  readonly provider: SandboxProvider
}
