// Code cells over the SDK's `sandbox.runCode`, and its `Result` mapped to sandkeep's provider-neutral
// CodeOutput (no SDK class leaks out).
import type { Result, Sandbox } from '@e2b/code-interpreter'
import { type CodeOutput, type CodeResult, type RunCodeOptions, SandkeepError } from '@sandkeep/core'
import { DEFAULT_TIMEOUT_MS } from './commands.js'
import { type ErrorContext, withE2BErrors } from './errors.js'
import type { OutputLimits } from './options.js'
import { capText, createCappedText } from './output.js'

export function runCode(
  sandbox: Sandbox,
  at: (operation: string) => ErrorContext,
  code: string,
  options: RunCodeOptions,
  limits: OutputLimits,
): Promise<CodeResult> {
  return withE2BErrors(at('runCode'), async () => {
    const language = options.language ?? 'python'
    // Collected as it arrives, up to the cap, rather than joined from the SDK's logs afterwards.
    const stdout = createCappedText(limits.maxOutputChars)
    const stderr = createCappedText(limits.maxOutputChars)
    const common = {
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      onStdout: (m: { line: string }) => {
        stdout.push(m.line)
        options.onStdout?.(m.line)
      },
      onStderr: (m: { line: string }) => {
        stderr.push(m.line)
        options.onStderr?.(m.line)
      },
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
    const cap = (text: string) => capText(text, limits.maxOutputChars)
    return {
      text: execution.text === undefined || execution.text === null ? null : cap(execution.text),
      results: execution.results.map((result) => toCodeOutput(result, cap)),
      stdout: stdout.text(),
      stderr: stderr.text(),
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

/**
 * The SDK's `Result` as a provider-neutral CodeOutput (only the formats present; no SDK class leaks out).
 * Its `text` goes through `cap`; the other formats are kept whole (a cut image or document is no use).
 */
function toCodeOutput(result: Result, cap: (text: string) => string): CodeOutput {
  const output: CodeOutput = { isMainResult: result.isMainResult }
  for (const key of OUTPUT_STRINGS) {
    const value = result[key]
    if (typeof value === 'string') output[key] = key === 'text' ? cap(value) : value
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
