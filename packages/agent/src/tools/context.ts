import { executeTool } from './execute.js'
import type { ToolsSettings } from './options.js'
import { streamToolCall } from './streaming.js'
import type { OutputCallbacks, ToolSandbox } from './tool-sandbox.js'
import type { SandboxToolCallOptions, ToolErrorResult, ToolProgressResult } from './types.js'

/** What every tool of one `createSandboxTools()` set shares: its settings and how a call runs. */
export interface ToolContext {
  readonly settings: ToolsSettings
  /** Runs one call once: failures become results, the state notice goes on the first result. */
  execute<T extends object>(
    callSandbox: SandboxToolCallOptions['sandbox'],
    fn: (sandbox: ToolSandbox) => Promise<T>,
  ): Promise<T | ToolErrorResult>
  /** Like `execute`, but yields the output so far while it runs when `streamOutput` is on. */
  executeStreaming<T extends object>(
    callSandbox: SandboxToolCallOptions['sandbox'],
    fn: (sandbox: ToolSandbox, output?: OutputCallbacks) => Promise<T>,
  ): Promise<T | ToolErrorResult> | AsyncGenerator<T | ToolErrorResult | ToolProgressResult>
  /** True when a successful call with this `setup` flag is recorded as a setup step. */
  wantsRecord(flag: boolean | undefined): boolean
}

export function createToolContext(settings: ToolsSettings): ToolContext {
  const execute: ToolContext['execute'] = (callSandbox, fn) => executeTool(settings.session, callSandbox, fn)
  return {
    settings,
    execute,
    executeStreaming: (callSandbox, fn) =>
      settings.streamIntervalMs > 0
        ? streamToolCall(
            (output) => execute(callSandbox, (sandbox) => fn(sandbox, output)),
            settings.maxOutputChars,
            settings.streamIntervalMs,
          )
        : execute(callSandbox, (sandbox) => fn(sandbox)),
    wantsRecord: (flag) =>
      settings.setupSteps === 'all' || (settings.setupSteps === 'flagged' && flag === true),
  }
}
