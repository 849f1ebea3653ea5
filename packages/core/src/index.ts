// `@sandkeep/core`: every public name an app imports, each by name, so that a reader sees the whole surface
// here and no module adds to it by accident. The kit that providers are built from is
// `@sandkeep/core/provider`, the one stores are built from `@sandkeep/core/store`; the test doubles and
// conformance suites are the `@sandkeep/testing` package.

// The one TURN_ENDED error and the one way to join abort signals (for adapters over a turn)
export { mergeAbortSignals } from './contract/abort-signals.js'
// Errors
export { SandkeepError, SandkeepErrorCode, type SandkeepErrorOptions } from './contract/errors.js'
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
} from './contract/health.js'
// The journal
export type { CodeLanguage, JournalEntry, JournalStep } from './contract/journal.js'
export type { LogFields, LogLevel, SandkeepLogger } from './contract/logger-types.js'
// Reports
export type {
  JournalOnlyCheckpoint,
  RehydrateFailures,
  RestoreReport,
  ResumeOutcome,
  ResumeReport,
  TurnEndReport,
} from './contract/report.js'
// What sandkeep writes on the sandboxes it creates
export { hashConversationId, SANDKEEP_METADATA } from './contract/sandbox-metadata.js'
// The provider contract (also at `@sandkeep/core/provider`, with the helpers a provider is built from)
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
} from './contract/sandbox-provider.js'
export type {
  CheckpointsOption,
  CloseOptions,
  CloseResult,
  ForkOptions,
  ForkResult,
  GcOptions,
  GcResult,
  MidTurnCheckpoint,
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
} from './contract/session-manager-types.js'
// The store contract
export type {
  Checkpoint,
  CheckpointSnapshot,
  CheckpointTree,
  FileWitness,
  SessionPage,
  SessionRecord,
  SessionRestore,
  SessionSandboxState,
  SessionStore,
  TenantSnapshot,
  TenantSnapshotUsage,
  TurnManifest,
} from './contract/session-store.js'
export { type TurnEndedScope, turnEndedError } from './contract/turn-ended.js'
// Session keys: what a conversation id and a tenant may be
export {
  DEFAULT_TENANT,
  MAX_CONVERSATION_ID_BYTES,
  type SessionKey,
  TENANT_PATTERN,
  validateConversationId,
  validateSessionKey,
  validateTenant,
} from './contract/validation.js'
export { SANDKEEP_VERSION } from './contract/version.js'
// Moved to `@sandkeep/core/provider` and `@sandkeep/core/store`, re-exported here deprecated
export {
  type AcquireResult,
  type CheckpointInput,
  type ClaimResult,
  type CreateForkInput,
  checkMaxBytes,
  type ForkSource,
  type Lease,
  type MidTurnCheckpointInput,
  type MidTurnCheckpointResult,
  type ReleaseInput,
  type ReleaseResult,
  type RewindInput,
  type RewindResult,
  readAtMost,
  readLimitError,
  SESSION_RECORD_SCHEMA_VERSION,
  type SetSandboxInput,
  SNAPSHOT_NAME_PATTERN,
  shellQuote,
  snapshotBaseName,
  validateCreateSnapshotOptions,
  validateListSnapshotsOptions,
  validateNetworkPolicy,
  validatePort,
  validateSandboxId,
  validateSnapshotId,
} from './deprecated.js'
// The session manager
export { createSessionManager } from './manager/session-manager.js'
// The in-memory store
export { createMemorySessionStore, type MemorySessionStoreOptions } from './store/memory-store.js'
export type { TelemetryMeter, TelemetryOption, TelemetrySpan, TelemetryTracer } from './telemetry/api.js'
