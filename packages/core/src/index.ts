// `@sandkeep/core`: every public name, each by name, so that a reader sees the whole surface here and no module
// adds to it by accident. The kit that stores are built from is `@sandkeep/core/store`; the test doubles and
// conformance suites are `@sandkeep/core/test`.

// Reads bounded by a byte count (for providers implementing `readFile`'s `maxBytes`)
export { checkMaxBytes, readAtMost, readLimitError } from './bounded-read.js'
// Errors
export { SandkeepError, SandkeepErrorCode, type SandkeepErrorOptions } from './errors.js'
// Health checks
export {
  type CodeHealthCheck,
  type CustomHealthCheck,
  codeCheck,
  customCheck,
  type FileHealthCheck,
  fileCheck,
  type HealthCheck,
  type HealthCheckBase,
  type HealthCheckContext,
  type HealthCheckResult,
  type HealthCheckStatus,
  type HealthRepair,
  type PortHealthCheck,
  type ProcessHealthCheck,
  portCheck,
  processCheck,
} from './health.js'
// The journal
export type { CodeLanguage, JournalEntry, JournalStep } from './journal.js'
export type { LogFields, LogLevel, SandkeepLogger } from './logger-types.js'
// The in-memory store
export { createMemorySessionStore, type MemorySessionStoreOptions } from './memory-store.js'
// Reports
export type {
  JournalOnlyCheckpoint,
  RehydrateFailures,
  RestoreReport,
  ResumeOutcome,
  ResumeReport,
  TurnEndReport,
} from './report.js'
// What sandkeep writes on the sandboxes it creates
export { hashConversationId, SANDKEEP_METADATA } from './sandbox-metadata.js'
// The provider contract
export type {
  CodeOutput,
  CodeResult,
  CommandResult,
  ConnectSandboxOptions,
  CreateCapability,
  CreateSandboxOptions,
  CreateSnapshotOptions,
  FileEntry,
  PortEndpoint,
  PortEndpointOptions,
  ProcessInfo,
  ReadFileOptions,
  RunCodeOptions,
  RunCommandOptions,
  SandboxCreateNetwork,
  SandboxHandle,
  SandboxInfo,
  SandboxLifecycle,
  SandboxNetworkPolicy,
  SandboxProvider,
  SandboxState,
  SnapshotInfo,
  SnapshotKeeps,
  TakenSnapshot,
} from './sandbox-provider.js'
// The session manager
export { createSessionManager } from './session-manager.js'
export type {
  CheckpointsOption,
  CloseOptions,
  CloseResult,
  ForkOptions,
  ForkResult,
  GcOptions,
  GcResult,
  OnTurnEnd,
  RestoreOptions,
  RestoreResult,
  RewindOptions,
  RewindResultReport,
  SessionManager,
  SessionManagerEvents,
  SessionManagerOptions,
  Turn,
  TurnJournal,
  TurnOptions,
} from './session-manager-types.js'
// The store contract
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
} from './session-store.js'
export { shellQuote } from './shell.js'
export type { TelemetryMeter, TelemetryOption, TelemetrySpan, TelemetryTracer } from './telemetry/api.js'
// Session keys: what a conversation id and a tenant may be
export {
  DEFAULT_TENANT,
  MAX_CONVERSATION_ID_BYTES,
  type SessionKey,
  SNAPSHOT_NAME_PATTERN,
  snapshotBaseName,
  TENANT_PATTERN,
  validateConversationId,
  validateCreateSnapshotOptions,
  validateListSnapshotsOptions,
  validateNetworkPolicy,
  validatePort,
  validateSandboxId,
  validateSessionKey,
  validateSnapshotId,
  validateTenant,
} from './validation.js'
export { SANDKEEP_VERSION } from './version.js'
