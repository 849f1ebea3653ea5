// The AI SDK type of the tool set; the inputs and results are @sandkeep/agent's.
import type {
  BackgroundCommandToolResult,
  CodeToolResult,
  CommandToolResult,
  ListFilesInput,
  ListFilesToolResult,
  PreviewUrlInput,
  PreviewUrlToolResult,
  ReadFileInput,
  ReadFileToolResult,
  RunCodeInput,
  RunCommandInput,
  ToolErrorResult,
  ToolProgressResult,
  WriteFileInput,
  WriteFileToolResult,
} from '@sandkeep/agent'
import type { Tool } from 'ai'

/** The tool set {@link sandboxTools} returns; every result is either the tool's result or a {@link ToolErrorResult}. */
export type SandboxTools = {
  /** Runs Python or JavaScript in the persistent interpreter; images go to the model as image parts. */
  runCode: Tool<RunCodeInput, CodeToolResult | ToolErrorResult | ToolProgressResult>
  /** Runs a shell command. */
  runCommand: Tool<
    RunCommandInput,
    CommandToolResult | BackgroundCommandToolResult | ToolErrorResult | ToolProgressResult
  >
  /** Reads a text file (optionally a line range). */
  readFile: Tool<ReadFileInput, ReadFileToolResult | ToolErrorResult>
  /** Writes a text file. */
  writeFile: Tool<WriteFileInput, WriteFileToolResult | ToolErrorResult>
  /** Lists a directory. */
  listFiles: Tool<ListFilesInput, ListFilesToolResult | ToolErrorResult>
  /** The public URL of a server the sandbox runs, to hand to the user. */
  previewUrl: Tool<PreviewUrlInput, PreviewUrlToolResult | ToolErrorResult>
}
