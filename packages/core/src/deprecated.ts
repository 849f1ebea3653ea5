// Names that moved off `@sandkeep/core`'s root: the provider kit to `@sandkeep/core/provider`, the store's
// method inputs and results to `@sandkeep/core/store`. The root re-exports them, marked deprecated, so code
// written against the old root keeps working; each is the very value or type of its new entry.
import * as bounded from './contract/bounded-read.js'
import type * as store from './contract/session-store.js'
import { SESSION_RECORD_SCHEMA_VERSION as schemaVersion } from './contract/session-store.js'
import * as shell from './contract/shell.js'
import * as validation from './contract/validation.js'

/** @deprecated Import it from `@sandkeep/core/provider`. */
export const checkMaxBytes: typeof bounded.checkMaxBytes = bounded.checkMaxBytes
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const readAtMost: typeof bounded.readAtMost = bounded.readAtMost
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const readLimitError: typeof bounded.readLimitError = bounded.readLimitError
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const shellQuote: typeof shell.shellQuote = shell.shellQuote
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const SNAPSHOT_NAME_PATTERN: typeof validation.SNAPSHOT_NAME_PATTERN = validation.SNAPSHOT_NAME_PATTERN
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const snapshotBaseName: typeof validation.snapshotBaseName = validation.snapshotBaseName
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const validateCreateSnapshotOptions: typeof validation.validateCreateSnapshotOptions =
  validation.validateCreateSnapshotOptions
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const validateListSnapshotsOptions: typeof validation.validateListSnapshotsOptions =
  validation.validateListSnapshotsOptions
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const validateNetworkPolicy: typeof validation.validateNetworkPolicy = validation.validateNetworkPolicy
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const validatePort: typeof validation.validatePort = validation.validatePort
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const validateSandboxId: typeof validation.validateSandboxId = validation.validateSandboxId
/** @deprecated Import it from `@sandkeep/core/provider`. */
export const validateSnapshotId: typeof validation.validateSnapshotId = validation.validateSnapshotId

/** @deprecated Import it from `@sandkeep/core/store`. */
export const SESSION_RECORD_SCHEMA_VERSION: typeof schemaVersion = schemaVersion
/** @deprecated Import it from `@sandkeep/core/store`. */
export type AcquireResult = store.AcquireResult
/** @deprecated Import it from `@sandkeep/core/store`. */
export type CheckpointInput = store.CheckpointInput
/** @deprecated Import it from `@sandkeep/core/store`. */
export type ClaimResult = store.ClaimResult
/** @deprecated Import it from `@sandkeep/core/store`. */
export type CreateForkInput = store.CreateForkInput
/** @deprecated Import it from `@sandkeep/core/store`. */
export type ForkSource = store.ForkSource
/** @deprecated Import it from `@sandkeep/core/store`. */
export type Lease = store.Lease
/** @deprecated Import it from `@sandkeep/core/store`. */
export type MidTurnCheckpointInput = store.MidTurnCheckpointInput
/** @deprecated Import it from `@sandkeep/core/store`. */
export type MidTurnCheckpointResult = store.MidTurnCheckpointResult
/** @deprecated Import it from `@sandkeep/core/store`. */
export type ReleaseInput = store.ReleaseInput
/** @deprecated Import it from `@sandkeep/core/store`. */
export type ReleaseResult = store.ReleaseResult
/** @deprecated Import it from `@sandkeep/core/store`. */
export type RewindInput = store.RewindInput
/** @deprecated Import it from `@sandkeep/core/store`. */
export type RewindResult = store.RewindResult
/** @deprecated Import it from `@sandkeep/core/store`. */
export type SetSandboxInput = store.SetSandboxInput
