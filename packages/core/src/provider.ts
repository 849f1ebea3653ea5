// `@sandkeep/core/provider`: what a SandboxProvider is built from. The provider contract (the types every
// provider implements), the input checks every provider runs so that all refuse the same inputs with the
// same words, bounded reads for `readFile`'s `maxBytes`, shell quoting, and the probe's wire words that a
// fake provider answers. Then run `sandboxProviderConformance` from `@sandkeep/testing` against it.

export { MARKER_PATH, SENTINEL_VARIABLE } from './assessment/fidelity.js'
// The probe's wire words: what a fake provider reads in, and answers to, sandkeep's fidelity probe cells
export { CARRIED_KEPT_LINE, CARRIED_LOST_ERROR, CARRIED_PROBE_TAG } from './assessment/fidelity-carried.js'
export { CARRIED_LOST_EXIT } from './assessment/fidelity-carried-command.js'
export { PROBE_CELL_TAG } from './assessment/fidelity-cell.js'
// Reads bounded by a byte count (for `readFile`'s `maxBytes`)
export { checkMaxBytes, readAtMost, readLimitError } from './contract/bounded-read.js'
// Errors
export { SandkeepError, SandkeepErrorCode, type SandkeepErrorOptions } from './contract/errors.js'
// What sandkeep writes on the sandboxes it creates
export { hashConversationId, SANDKEEP_METADATA } from './contract/sandbox-metadata.js'
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
} from './contract/sandbox-provider.js'
export { shellQuote } from './contract/shell.js'
// Input checks
export {
  SNAPSHOT_NAME_PATTERN,
  snapshotBaseName,
  validateCreateSnapshotOptions,
  validateListSnapshotsOptions,
  validateNetworkPolicy,
  validatePort,
  validateSandboxId,
  validateSnapshotId,
} from './contract/validation.js'
