// sandboxTools wires the tools together; each concern has its own file under tools/: options (checks,
// defaults), types (inputs and results), tool-sandbox (sandkeep session or any AI SDK sandbox), execute
// (errors as results, notices, setup steps), streaming (partial results), model-output (shaping for the
// model), and one file per tool: run-code, run-command, files (readFile, writeFile, listFiles),
// preview-url.
import { createToolContext } from './tools/context.js'
import { listFilesTool, readFileTool, writeFileTool } from './tools/files.js'
import { resolveToolsOptions, type SandboxToolsOptions } from './tools/options.js'
import { previewUrlTool } from './tools/preview-url.js'
import { runCodeTool } from './tools/run-code.js'
import { runCommandTool } from './tools/run-command.js'
import type { SandboxTools } from './tools/types.js'

export { codeModelOutput } from './tools/model-output.js'
export type { SandboxToolsOptions } from './tools/options.js'
export type {
  BackgroundCommandToolResult,
  CodeToolOutput,
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
  SandboxTools,
  ToolErrorResult,
  ToolProgressResult,
  WriteFileInput,
  WriteFileToolResult,
} from './tools/types.js'

/**
 * The sandbox tools for a model: `runCode`, `runCommand`, `readFile`, `writeFile`, `listFiles`, `previewUrl`. Results are
 * shaped for a model (exit codes, output cut with a note, errors as results, a notice when earlier state
 * is gone) and never throw.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export function sandboxTools(options: SandboxToolsOptions = {}): SandboxTools {
  const context = createToolContext(resolveToolsOptions(options))
  return {
    runCode: runCodeTool(context),
    runCommand: runCommandTool(context),
    readFile: readFileTool(context),
    writeFile: writeFileTool(context),
    listFiles: listFilesTool(context),
    previewUrl: previewUrlTool(context),
  }
}
