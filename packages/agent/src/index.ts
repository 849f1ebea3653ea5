// @sandkeep/agent: what every framework adapter of sandkeep shares, naming no framework. The session, the
// tools as specs, the notice to the model, and the turn's branch and end; @sandkeep/ai-sdk (and the other
// adapters) wrap these in their framework's types.

export { sliceLines, splitLines, stateLostNotice, type TruncatedText, truncateOutput } from './output.js'
export {
  createSandboxSession,
  DEFAULT_WORKING_DIRECTORY,
  isSandkeepSandboxSession,
  restrictedSandboxSession,
  type SandboxSession,
  type SandboxSessionOptions,
  type SessionRunCodeOptions,
  type SessionRunCommandOptions,
} from './sandbox-session/index.js'
export type {
  PathOptions,
  ReadBinaryFileOptions,
  ReadTextFileOptions,
  RunOptions,
  SandboxDirectoryEntry,
  SandboxFileStat,
  SandboxProcess,
  SpawnOptions,
  WriteBinaryFileOptions,
  WriteFileOptions,
  WriteTextFileOptions,
} from './sandbox-session/types.js'
export {
  type BackgroundCommandToolResult,
  type CodeResultContent,
  type CodeToolOutput,
  type CodeToolResult,
  type CommandToolResult,
  codeResultContent,
  createSandboxTools,
  type GenericSandbox,
  type ListFilesInput,
  type ListFilesToolResult,
  type PreviewUrlInput,
  type PreviewUrlToolResult,
  type ReadFileInput,
  type ReadFileToolResult,
  type RunCodeInput,
  type RunCommandInput,
  type SandboxToolCallOptions,
  type SandboxToolSpec,
  type SandboxToolSpecs,
  type SandboxToolsOptions,
  type ToolErrorResult,
  type ToolProgressResult,
  type WriteFileInput,
  type WriteFileToolResult,
} from './sandbox-tools.js'
export { type BranchMove, checkBranch, moveForBranch, type SandkeepTurnBranch } from './turn/branch.js'
export { createTurnControl, type TurnControl } from './turn/control.js'
export {
  type BranchRequest,
  branchFromMessages,
  checkpointMetadata,
  type MessageWithMetadata,
  type SandkeepMessageMetadata,
  sandkeepMetadataOf,
} from './turn/metadata.js'
