// Code cells over the SDK's `sandbox.runCode`, and its `Result` mapped to sandkeep's provider-neutral
// CodeOutput (no SDK class leaks out).
import type { Result, Sandbox } from '@e2b/code-interpreter'
import { type CodeOutput, type CodeResult, type RunCodeOptions, SandkeepError } from '@sandkeep/core'
import { DEFAULT_TIMEOUT_MS } from './commands.js'
import { type ErrorContext, withE2BErrors } from './errors.js'

export function runCode(
  sandbox: Sandbox,
  at: (operation: string) => ErrorContext,
  code: string,
  options: RunCodeOptions = {},
): Promise<CodeResult> {
  return withE2BErrors(at('runCode'), async () => {
    const language = options.language ?? 'python'
    const common = {
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      ...(options.onStdout ? { onStdout: (m: { line: string }) => options.onStdout?.(m.line) } : {}),
      ...(options.onStderr ? { onStderr: (m: { line: string }) => options.onStderr?.(m.line) } : {}),
    }
    if (options.signal?.aborted)
      throw new SandkeepError({
        code: 'ABORTED',
        message: 'runCode was aborted.',
        sandboxId: sandbox.sandboxId,
      })
    const execution = options.contextId
      ? await sandbox.runCode(code, {
          ...common,
          context: { id: options.contextId, language, cwd: '/home/user' },
        })
      : await sandbox.runCode(code, { ...common, language })
    return {
      text: execution.text ?? null,
      results: execution.results.map(toCodeOutput),
      stdout: execution.logs.stdout.join(''),
      stderr: execution.logs.stderr.join(''),
      error: execution.error
        ? {
            name: execution.error.name,
            value: execution.error.value,
            traceback: execution.error.traceback,
          }
        : null,
    }
  })
}

const OUTPUT_STRINGS = [
  'text',
  'html',
  'markdown',
  'svg',
  'png',
  'jpeg',
  'pdf',
  'latex',
  'javascript',
] as const

/** The SDK's `Result` as a provider-neutral CodeOutput (only the formats present; no SDK class leaks out). */
function toCodeOutput(result: Result): CodeOutput {
  const output: CodeOutput = { isMainResult: result.isMainResult }
  for (const key of OUTPUT_STRINGS) {
    const value = result[key]
    if (typeof value === 'string') output[key] = value
  }
  // Typed as a string by the SDK, but the server sends the JSON value itself (Jupyter's application/json).
  if (result.json !== undefined && result.json !== null) output.json = result.json
  if (result.data !== undefined && result.data !== null) output.data = result.data
  if (result.chart !== undefined && result.chart !== null)
    output.chart = result.chart as unknown as Record<string, unknown>
  // The SDK's `extra` holds unknown top-level keys only; the server's own `extra` object stays in `raw`.
  const rawExtra = (result.raw as Record<string, unknown>).extra
  const extra = {
    ...(typeof rawExtra === 'object' && rawExtra !== null ? (rawExtra as Record<string, unknown>) : {}),
    ...(result.extra ?? {}),
  }
  if (Object.keys(extra).length > 0) output.extra = extra
  return output
}
