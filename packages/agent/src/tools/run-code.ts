import { z } from 'zod'
import type { ToolContext } from './context.js'
import { joinNotes, recordStep } from './execute.js'
import { shapeCodeResult } from './model-output.js'
import { setupField } from './setup-field.js'
import type { OutputCallbacks, ToolSandbox } from './tool-sandbox.js'
import type { CodeToolResult, RunCodeInput, SandboxToolSpecs } from './types.js'

/** The `runCode` tool: a cell in the persistent interpreter; images go to the model as image parts. */
export function runCodeTool(context: ToolContext): SandboxToolSpecs['runCode'] {
  return {
    name: 'runCode',
    description:
      "Run Python or JavaScript code in the sandbox's persistent interpreter (a notebook kernel): " +
      'variables, imports and functions stay defined for later calls and later turns. Returns the value ' +
      'of the last expression, printed output, and the exception if one was raised.',
    inputSchema: z.object({
      code: z.string().min(1).describe('The code to run.'),
      language: z.enum(['python', 'javascript']).optional().describe("Default 'python'."),
      setup: setupField,
    }),
    execute: (input, { abortSignal, sandbox: callSandbox } = {}) =>
      context.executeStreaming<CodeToolResult>(callSandbox, (sandbox, output) =>
        runCode(context, input, sandbox, abortSignal, output),
      ),
  }
}

async function runCode(
  { settings, wantsRecord }: ToolContext,
  input: RunCodeInput,
  sandbox: ToolSandbox,
  abortSignal: AbortSignal | undefined,
  output: OutputCallbacks | undefined,
): Promise<CodeToolResult> {
  const language = input.language ?? 'python'
  const result = await sandbox.runCode(input.code, {
    language,
    timeoutMs: settings.timeoutMs,
    ...(abortSignal ? { abortSignal } : {}),
    ...output,
  })
  const { maxImageBytes, maxImages } = settings
  const shaped = shapeCodeResult(result, settings.maxOutputChars, { maxImageBytes, maxImages })
  if (shaped.error === undefined && wantsRecord(input.setup)) {
    const note = await recordStep(sandbox, { kind: 'code', code: input.code, language })
    if (note) shaped.notice = note
  }
  if (!sandbox.persistentCode) {
    shaped.notice = joinNotes(
      shaped.notice,
      'This sandbox runs each code cell as a fresh script: variables do not persist between calls.',
    )
  }
  return shaped
}
