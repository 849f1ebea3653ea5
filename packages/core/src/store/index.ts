// `@sandkeep/core/store`: the kit a SessionStore is built from. The memory store, the Redis store and
// third-party stores take their input checks, record parsing, limits, list cursor and errors from here, so
// every store refuses the same inputs with the same words. Then run `sessionStoreConformance` from
// `@sandkeep/testing` against the store.
export { SandkeepError } from '../contract/errors.js'
export type { JournalEntry, JournalStep } from '../contract/journal.js'
// The store contract: the interface, its records, and its methods' inputs and results
export {
  type AcquireResult,
  type Checkpoint,
  type CheckpointInput,
  type CheckpointSnapshot,
  type CheckpointTree,
  type ClaimResult,
  type CreateForkInput,
  type FileWitness,
  type ForkSource,
  type Lease,
  type MidTurnCheckpointInput,
  type MidTurnCheckpointResult,
  type ReleaseInput,
  type ReleaseResult,
  type RewindInput,
  type RewindResult,
  SESSION_RECORD_SCHEMA_VERSION,
  type SessionPage,
  type SessionRecord,
  type SessionRestore,
  type SessionSandboxState,
  type SessionStore,
  type SetSandboxInput,
  type TenantSnapshot,
  type TenantSnapshotUsage,
  type TurnManifest,
} from '../contract/session-store.js'
export {
  BIDI_CONTROLS,
  CHECKPOINT_ID_PATTERN,
  CONTROL_CHARACTERS,
  invalidArgument,
  rejectUnknownOptions,
  type SessionKey,
  TENANT_PATTERN,
  validateCheckpointId,
  validateInteger,
  validateSandboxId,
  validateSessionKey,
  validateTenant,
} from '../contract/validation.js'
export {
  type CheckedCreateForkInput,
  type CheckedRewindInput,
  checkCheckpointInput,
  checkCheckpointTarget,
  checkCreateForkInput,
  checkMidTurnCheckpointInput,
  checkpointNotFound,
  checkRewindInput,
  checkSnapshot,
  forkJournal,
  forkRestore,
  legacyCheckpointId,
  MAX_CHECKPOINT_TURN,
  MAX_CHECKPOINTS_KEPT,
  MAX_PRUNED_IDS_REMEMBERED,
  newCheckpointId,
  parseStoredCheckpoint,
  parseStoredCheckpoints,
  parseStoredRestore,
  rewindBusy,
  sessionExists,
} from './checkpoint.js'
export {
  compareListPositions,
  decodeListCursor,
  encodeListCursor,
  isAfterListPosition,
  type ListPosition,
} from './cursor.js'
export {
  corruptRecordError,
  type JournalLimits,
  type JournalUsage,
  journalFull,
  leaseLost,
  sessionHeld,
  storeClosed,
} from './errors.js'
export {
  type CheckedAcquireOptions,
  type CheckedReleaseInput,
  checkAcquireOptions,
  checkHolderId,
  checkLease,
  checkLeaseMs,
  checkListOptions,
  checkReleaseInput,
  checkRenewOptions,
  checkSandboxState,
  checkSetSandboxInput,
  checkSetStateOptions,
  checkStoreKey,
  SANDBOX_STATES,
} from './input.js'
export {
  checkJournalStep,
  journalFilePathProblem,
  parseJournalEntry,
  serializeJournalEntry,
  validateJournalStep,
} from './journal-step.js'
export {
  checkJournalRoom,
  checkStoreLimits,
  checkTtlMs,
  DEFAULT_LIST_LIMIT,
  DEFAULT_MAX_JOURNAL_BYTES,
  DEFAULT_MAX_JOURNAL_STEPS,
  DEFAULT_SESSION_TTL_MS,
  MAX_HOLDER_ID_BYTES,
  MAX_JOURNAL_STEP_BYTES,
  MAX_LEASE_MS,
  MAX_LIST_LIMIT,
  MAX_MANIFEST_BYTES,
  MAX_MANIFEST_WITNESSES,
  MAX_SESSION_TTL_MS,
  type StoreLimits,
  utf8Bytes,
} from './limits.js'
export { checkManifest } from './manifest.js'
export { checkRecordValues, conversationHash, parseRecordFields } from './record.js'
export {
  checkForgottenSnapshots,
  checkTenantSnapshot,
  encodeSnapshotBytes,
  MAX_FORGOTTEN_SNAPSHOTS,
  totalSnapshotUsage,
} from './tenant-snapshots.js'
