import type { HealthCheckResult } from './health.js'
import type { JournalStep } from './journal.js'
import type { Checkpoint } from './session-store.js'

/** How the turn got its sandbox. */
export type ResumeOutcome =
  /** No sandbox was mapped: one was created (and bootstrapped). */
  | 'created'
  /** The mapped sandbox was paused and `connect` resumed it. */
  | 'resumed'
  /** The mapped sandbox was already running (another turn held it, or `keep`). */
  | 'reconnected'
  /** The mapped sandbox was gone (killed, past retention): a new one was created and rehydrated. */
  | 'recreated'
  /** A `rewind` was pending: the sandbox was made from that checkpoint (see `restored`). */
  | 'rewound'
  /** The session's first turn after a `fork`: the sandbox was made from the source's checkpoint (`restored`). */
  | 'forked'

/** How a rewound or forked turn got the checkpoint's state (`ResumeReport.restored`). */
export interface RestoreReport {
  /** Rewind or fork. */
  kind: 'rewound' | 'forked'
  /** The checkpoint's turn (0: before the first turn). */
  turn: number
  /**
   * `'snapshot'`: created from the checkpoint's platform snapshot (what it did not keep, such as memory, was
   * rebuilt from the journal); `'journal'`: a fresh sandbox with the journal replayed up to the checkpoint.
   */
  source: 'snapshot' | 'journal'
  /** The snapshot created from (or the one that was lost, with `snapshotLost`). */
  snapshotId?: string
  /** The checkpoint's snapshot was gone on the platform (404): the journal stood in, and `stateLost` is true. */
  snapshotLost?: boolean
  /** For a fork: the conversation it was forked from. */
  fromConversationId?: string
}

/** What the start of a turn found and did. Available as `turn.report` once the sandbox is resumed. */
export interface ResumeReport {
  /** Conversation id. */
  conversationId: string
  /** Tenant. */
  tenant: string
  /** The sandbox this turn uses. */
  sandboxId: string
  /** The sandbox mapped before this turn, when it differs from `sandboxId` (recreated, or re-mapped). */
  previousSandboxId?: string
  /** How the sandbox was obtained. */
  outcome: ResumeOutcome
  /** Durations, ms. */
  timings: {
    /** Store round trips at turn start (lease + record). */
    storeMs: number
    /** Provider create/connect, retries included. */
    connectMs: number
    /** Built-in and declared probes, repairs included. */
    healthMs: number
    /** Bootstrap and journal replay. */
    rehydrateMs: number
    /** From `beginTurn` (or the first lazy use) to the sandbox being ready. */
    totalMs: number
  }
  /** What the pause kept, from the built-in probes: true kept, false lost, null unknown (nothing to compare). */
  survived: { memory: boolean | null; filesystem: boolean | null; processes: boolean | null }
  /** Probe results, built-in first, then declared. */
  checks: HealthCheckResult[]
  /** True when earlier sandbox state is gone (recreated, or memory lost): tell the model. */
  stateLost: boolean
  /** Provider calls retried because of transient failures. */
  retries: number
  /** Journal steps replayed. */
  rehydratedSteps: number
  /**
   * Journal steps that failed at replay, when any did. The other steps still ran (a failing step does not
   * stop the replay); absent when every step replayed.
   */
  rehydrateFailures?: RehydrateFailures
  /**
   * Files the replay did not write because the sandbox (the conversation's own, resumed) held another
   * version of them: kept as they were, since they may be newer than the journal's. Present only then.
   */
  keptFiles?: string[]
  /** With `outcome` `'rewound'` or `'forked'`: what was restored, from where. */
  restored?: RestoreReport
}

/** The journal steps a replay could not apply. */
export interface RehydrateFailures {
  /** How many steps failed. */
  count: number
  /** Steps after the last failure that were not run because the sandbox itself stopped answering; usually 0. */
  skipped: number
  /** The first failed steps (at most 10), in journal order. */
  steps: Array<{
    /** The step's position in the journal, 1-based (as `turn.journal.list()` orders it). */
    step: number
    /** The step's kind. */
    kind: JournalStep['kind']
    /** Why it failed: the exit code and the start of stderr, the exception, or the provider's refusal. */
    message: string
  }>
}

/** What `turn.end()` did. */
export interface TurnEndReport {
  /** What happened to the sandbox. */
  action: 'paused' | 'auto-pause' | 'kept' | 'killed' | 'left-running-for-other-holders' | 'none'
  /** True when this turn was the last holder. */
  last: boolean
  /** Durations, ms. */
  timings: {
    /** Time inside the turn body (ready to end). */
    workMs: number
    /** The store round trip at turn end. */
    storeMs: number
    /** The pause (or setTimeout, or kill) call. */
    pauseMs: number
    /** The platform snapshot of the turn's checkpoint; 0 without one. */
    checkpointMs?: number
  }
  /**
   * The checkpoint of this turn's end, with the `checkpoints` option (store it with the assistant message:
   * `rewind` and `fork` take its `turn`). Absent when checkpoints are off or the release did not record one.
   */
  checkpoint?: Checkpoint
  /**
   * The checkpoint was recorded journal-only (no snapshot: a restore to it replays the branch's journal)
   * because a limit was reached, and what the tenant is told: `tenant-snapshots` and `tenant-snapshot-bytes`
   * are the manager's per-tenant limits (`checkpoints.tenantLimits`), `platform-quota` the platform's
   * snapshot quota (shared by every tenant of the API key; not retried). Absent when a snapshot was taken or
   * none was due.
   */
  journalOnly?: JournalOnlyCheckpoint
  /** An error the end swallowed so the turn body's outcome stands (pause failed, store down). */
  error?: { code: string; message: string }
}

/** Why a checkpoint was recorded without a snapshot ({@link TurnEndReport.journalOnly}). */
export interface JournalOnlyCheckpoint {
  /** The limit reached. */
  limit: 'tenant-snapshots' | 'tenant-snapshot-bytes' | 'platform-quota'
  /** What the tenant is told (the QUOTA_EXCEEDED message of the `error` event, phase `checkpoint-limit`). */
  message: string
}
