// Code cells through the code interpreter's `/execute`, read by ./execute.ts (linear, capped, abortable),
// and its results as sandkeep's provider-neutral CodeOutput (no SDK class leaks out).
import { type CodeResult, type RunCodeOptions, SandkeepError } from '@sandkeep/core/provider'
import { DEFAULT_TIMEOUT_MS } from './commands.js'
import { type ErrorContext, withE2BErrors } from './errors.js'
import { type ExecutingSandbox, executeCell } from './execute.js'
import type { OutputLimits } from './options.js'
import { createCappedText } from './output.js'

export function runCode(
  sandbox: ExecutingSandbox,
  at: (operation: string) => ErrorContext,
  code: string,
  options: RunCodeOptions,
  limits: OutputLimits,
): Promise<CodeResult> {
  return withE2BErrors(at('runCode'), async () => {
    if (options.signal?.aborted)
      throw new SandkeepError({
        code: 'ABORTED',
        message: 'runCode was aborted.',
        sandboxId: sandbox.sandboxId,
      })
    const stdout = createCappedText(limits.maxOutputChars)
    const stderr = createCappedText(limits.maxOutputChars)
    const executed = await executeCell(
      sandbox,
      {
        code,
        language: options.language ?? 'python',
        ...(options.contextId ? { contextId: options.contextId } : {}),
        timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        ...(options.signal ? { signal: options.signal } : {}),
      },
      {
        stdout,
        stderr,
        maxChars: limits.maxOutputChars,
        ...(options.onStdout ? { onStdout: options.onStdout } : {}),
        ...(options.onStderr ? { onStderr: options.onStderr } : {}),
      },
    )
    return {
      text: executed.text,
      results: executed.results,
      stdout: stdout.text(),
      stderr: stderr.text(),
      error: executed.error,
    }
  })
}
