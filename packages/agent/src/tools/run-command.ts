import type { JournalStep } from '@sandkeep/core'
import { z } from 'zod'
import type { ToolContext } from './context.js'
import { recordStep } from './execute.js'
import { shapeCommandResult } from './model-output.js'
import { setupField } from './setup-field.js'
import type { OutputCallbacks, ToolSandbox } from './tool-sandbox.js'
import type {
  BackgroundCommandToolResult,
  CommandToolResult,
  RunCommandInput,
  SandboxToolSpecs,
} from './types.js'

type CommandResult = CommandToolResult | BackgroundCommandToolResult

/** The `runCommand` tool: a shell command waited for, or started in the background. */
export function runCommandTool(context: ToolContext): SandboxToolSpecs['runCommand'] {
  return {
    name: 'runCommand',
    description:
      'Run a shell command (bash) in the sandbox and return its exit code, stdout and stderr. A non-zero ' +
      'exit code is a normal result: read stderr and fix the command. Set background for servers and ' +
      'other long-running processes: they are started, keep running across turns, and are not waited for.',
    inputSchema: z.object({
      command: z.string().min(1).describe('The command line, run with bash -l -c.'),
      cwd: z.string().optional().describe('Working directory; default the sandbox home.'),
      background: z
        .boolean()
        .optional()
        .describe('Start it in the background (a server, a watcher) and return at once with its pid.'),
      setup: setupField,
    }),
    execute: (input, { abortSignal, sandbox: callSandbox } = {}) =>
      // A background command returns at once: nothing to stream.
      input.background
        ? context.execute<CommandResult>(callSandbox, (sandbox) =>
            startInBackground(context, input, sandbox, abortSignal),
          )
        : context.executeStreaming<CommandResult>(callSandbox, (sandbox, output) =>
            runToExit(context, input, sandbox, abortSignal, output),
          ),
  }
}

async function runToExit(
  { settings, wantsRecord }: ToolContext,
  input: RunCommandInput,
  sandbox: ToolSandbox,
  abortSignal: AbortSignal | undefined,
  output: OutputCallbacks | undefined,
): Promise<CommandToolResult> {
  const result = await sandbox.runCommand(input.command, {
    timeoutMs: settings.timeoutMs,
    ...(input.cwd === undefined ? {} : { cwd: input.cwd }),
    ...(abortSignal ? { abortSignal } : {}),
    ...output,
  })
  const shaped: CommandToolResult = shapeCommandResult(result, settings.maxOutputChars)
  if (result.exitCode === 0 && wantsRecord(input.setup)) {
    const step: JournalStep = { kind: 'command', command: input.command }
    if (input.cwd !== undefined) step.cwd = sandbox.resolvePath(input.cwd)
    const note = await recordStep(sandbox, step)
    if (note) shaped.notice = note
  }
  return shaped
}

async function startInBackground(
  { wantsRecord }: ToolContext,
  input: RunCommandInput,
  sandbox: ToolSandbox,
  abortSignal: AbortSignal | undefined,
): Promise<BackgroundCommandToolResult> {
  const { pid } = await sandbox.startProcess(input.command, {
    ...(input.cwd === undefined ? {} : { cwd: input.cwd }),
    ...(abortSignal ? { abortSignal } : {}),
  })
  const shaped: BackgroundCommandToolResult = {
    background: true,
    pid,
    note:
      'Started in the background; it keeps running after this call. Its output is not captured: ' +
      'redirect it to a file to read it later, and probe it (for example its port) to see it is up.',
  }
  // A background process is not a setup step: replaying it would wait on a server forever. Its
  // restart after a lost sandbox belongs to a health check (processCheck/portCheck with a repair).
  if (wantsRecord(input.setup)) {
    shaped.notice = 'Background commands are not recorded as setup steps; declare a health check instead.'
  }
  return shaped
}
