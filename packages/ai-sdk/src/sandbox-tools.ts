// sandboxTools: @sandkeep/agent's tool specs, each wrapped in the AI SDK's `tool()`. A call's
// `experimental_sandbox` is the sandbox of tools bound to no session; `runCode` sends images as image parts.
import {
  type SandboxToolsOptions as AgentToolsOptions,
  createSandboxTools,
  type SandboxToolCallOptions,
  type SandboxToolSpec,
} from '@sandkeep/agent'
import { type ToolExecutionOptions, tool } from 'ai'
import { codeModelOutput } from './code-model-output.js'
import type { SandkeepSandboxSession } from './sandbox-session/index.js'
import type { SandboxTools } from './tools/types.js'

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
  ToolErrorResult,
  ToolProgressResult,
  WriteFileInput,
  WriteFileToolResult,
} from '@sandkeep/agent'
export { codeModelOutput } from './code-model-output.js'
export type { SandboxTools } from './tools/types.js'

/** Options of {@link sandboxTools}: @sandkeep/agent's, with the session typed as the AI SDK's. */
export type SandboxToolsOptions = Omit<AgentToolsOptions, 'session'> & {
  /**
   * The sandbox the tools use. Default: the `experimental_sandbox` of the `generateText` / `streamText` /
   * agent call (a sandkeep session gets every feature; any other AI SDK sandbox gets commands and files,
   * and `runCode` without persistent state).
   */
  session?: SandkeepSandboxSession
}

/**
 * The sandbox tools for a model: `runCode`, `runCommand`, `readFile`, `writeFile`, `listFiles`, `previewUrl`. Results are
 * shaped for a model (exit codes, output cut with a note, errors as results, a notice when earlier state
 * is gone) and never throw.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export function sandboxTools(options: SandboxToolsOptions = {}): SandboxTools {
  const { session, ...rest } = options ?? {}
  const specs = createSandboxTools({
    ...rest,
    ...(session === undefined ? {} : { session }),
  })
  // Written out per tool: the AI SDK's tool() infers its types from concrete schemas, not generic ones.
  return {
    runCode: tool({
      ...described(specs.runCode),
      execute: (input, options) => specs.runCode.execute(input, callOptions(options)),
      toModelOutput: ({ output }) => codeModelOutput(output),
    }),
    runCommand: tool({
      ...described(specs.runCommand),
      execute: (input, options) => specs.runCommand.execute(input, callOptions(options)),
    }),
    readFile: tool({
      ...described(specs.readFile),
      execute: (input, options) => specs.readFile.execute(input, callOptions(options)),
    }),
    writeFile: tool({
      ...described(specs.writeFile),
      execute: (input, options) => specs.writeFile.execute(input, callOptions(options)),
    }),
    listFiles: tool({
      ...described(specs.listFiles),
      execute: (input, options) => specs.listFiles.execute(input, callOptions(options)),
    }),
    previewUrl: tool({
      ...described(specs.previewUrl),
      execute: (input, options) => specs.previewUrl.execute(input, callOptions(options)),
    }),
  }
}

/** What the model reads of a spec: its description and input schema. */
function described<INPUT>(spec: SandboxToolSpec<INPUT, unknown>) {
  return { description: spec.description, inputSchema: spec.inputSchema }
}

/** A spec's call options from the AI SDK's: the call's signal, and its `experimental_sandbox` for unbound tools. */
function callOptions({
  abortSignal,
  experimental_sandbox,
}: ToolExecutionOptions<unknown>): SandboxToolCallOptions {
  return {
    ...(abortSignal === undefined ? {} : { abortSignal }),
    ...(experimental_sandbox === undefined ? {} : { sandbox: experimental_sandbox }),
  }
}
