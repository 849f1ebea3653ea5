// createSandboxTools wires the tools together; each concern has its own file under tools/: options (checks,
// defaults), types (inputs, results, specs), tool-sandbox (sandkeep session or any other sandbox), execute
// (errors as results, notices, setup steps), streaming (partial results), model-output (shaping for the
// model), and one file per tool: run-code, run-command, files (readFile, writeFile, listFiles),
// preview-url.
import { createToolContext } from './tools/context.js'
import { listFilesTool, readFileTool, writeFileTool } from './tools/files.js'
import { resolveToolsOptions, type SandboxToolsOptions } from './tools/options.js'
import { previewUrlTool } from './tools/preview-url.js'
import { runCodeTool } from './tools/run-code.js'
import { runCommandTool } from './tools/run-command.js'
import type { SandboxToolSpecs } from './tools/types.js'

export { type CodeResultContent, codeResultContent } from './tools/model-output.js'
export type { SandboxToolsOptions } from './tools/options.js'
export type {
  BackgroundCommandToolResult,
  CodeToolOutput,
  CodeToolResult,
  CommandToolResult,
  GenericSandbox,
  ListFilesInput,
  ListFilesToolResult,
  PreviewUrlInput,
  PreviewUrlToolResult,
  ReadFileInput,
  ReadFileToolResult,
  RunCodeInput,
  RunCommandInput,
  SandboxToolCallOptions,
  SandboxToolSpec,
  SandboxToolSpecs,
  ToolErrorResult,
  ToolProgressResult,
  WriteFileInput,
  WriteFileToolResult,
} from './tools/types.js'

/**
 * The sandbox tools for a model as framework-neutral specs: `runCode`, `runCommand`, `readFile`, `writeFile`,
 * `listFiles`, `previewUrl`, each with its name, description, zod input schema and `execute`. Results are
 * shaped for a model (exit codes, output cut with a note, errors as results, a notice when earlier state is
 * gone) and never throw. A framework adapter wraps each spec in its own tool type.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export function createSandboxTools(options: SandboxToolsOptions = {}): SandboxToolSpecs {
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
