export { sliceLines, splitLines, stateLostNotice, type TruncatedText, truncateOutput } from './output.js'
export {
  createSandboxSession,
  DEFAULT_WORKING_DIRECTORY,
  isSandkeepSandboxSession,
  type SandboxSessionOptions,
  type SandkeepSandboxSession,
  type SessionRunCodeOptions,
  type SessionRunCommandOptions,
} from './sandbox-session/index.js'
export {
  type CodeToolOutput,
  type CodeToolResult,
  type CommandToolResult,
  codeModelOutput,
  type ListFilesInput,
  type ListFilesToolResult,
  type PreviewUrlInput,
  type PreviewUrlToolResult,
  type ReadFileInput,
  type ReadFileToolResult,
  type RunCodeInput,
  type RunCommandInput,
  type SandboxTools,
  type SandboxToolsOptions,
  sandboxTools,
  type ToolErrorResult,
  type ToolProgressResult,
  type WriteFileInput,
  type WriteFileToolResult,
} from './sandbox-tools.js'
export type { SandkeepTurnBranch } from './turn/branch.js'
export {
  type MessageMetadataCallback,
  type SandkeepTurn,
  type SandkeepTurnOptions,
  sandkeepTurn,
} from './turn/index.js'
export {
  type BranchRequest,
  branchFromMessages,
  checkpointMetadata,
  type MessageWithMetadata,
  type SandkeepMessageMetadata,
  sandkeepMetadataOf,
} from './turn/metadata.js'
