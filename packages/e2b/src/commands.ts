// Commands and processes over the SDK's `sandbox.commands`: runCommand waits (a non-zero exit and a
// timeout are results), startProcess detaches, listProcesses shows each command line as it was started.
import type { Sandbox } from '@e2b/code-interpreter'
import {
  type CommandResult,
  type ProcessInfo,
  type RunCommandOptions,
  type SandboxHandle,
  SandkeepError,
} from '@sandkeep/core/provider'
import { type ErrorContext, withE2BErrors } from './errors.js'
import type { OutputLimits } from './options.js'
import { createCappedText } from './output.js'

// The SDK's default command and cell timeout; sandkeep's contract says the same.
export const DEFAULT_TIMEOUT_MS = 60_000

type CommandCapabilities = Pick<
  SandboxHandle<Sandbox>,
  'runCommand' | 'startProcess' | 'listProcesses' | 'killProcess'
>

export function commandCapabilities(
  sandbox: Sandbox,
  at: (operation: string) => ErrorContext,
  limits: OutputLimits,
): CommandCapabilities {
  return {
    runCommand: (command, options = {}) =>
      withE2BErrors(at('commands.run'), () => runCommand(sandbox, command, options, limits)),
    startProcess: (command, processOptions) =>
      withE2BErrors(at('commands.run'), async () => {
        const handle = await sandbox.commands.run(command, {
          background: true,
          // No limit: a background process must outlive the turn (the sandbox timeout still bounds it).
          timeoutMs: 0,
          ...(processOptions?.cwd ? { cwd: processOptions.cwd } : {}),
          ...(processOptions?.envs ? { envs: processOptions.envs } : {}),
        })
        // Stop streaming its output to us; the process keeps running in the sandbox.
        await handle.disconnect()
        return { pid: handle.pid }
      }),
    listProcesses: () =>
      withE2BErrors(at('commands.list'), async () => {
        const list = await sandbox.commands.list()
        return list.map(
          (p): ProcessInfo => ({
            pid: p.pid,
            command: commandLine(p),
            cmd: p.cmd,
            args: p.args,
            ...(p.cwd ? { cwd: p.cwd } : {}),
          }),
        )
      }),
    killProcess: (pid) => withE2BErrors(at('commands.kill'), () => sandbox.commands.kill(pid)),
  }
}

async function runCommand(
  sandbox: Sandbox,
  command: string,
  options: RunCommandOptions,
  limits: OutputLimits,
): Promise<CommandResult> {
  const { signal, stdin } = options
  const sandboxId = sandbox.sandboxId
  if (signal?.aborted) throw aborted(sandboxId)
  // The output as it arrives, up to the cap: what the result carries (also for a command that times out).
  const stdout = createCappedText(limits.maxOutputChars)
  const stderr = createCappedText(limits.maxOutputChars)
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  // Started in the background so that stdin can be written and an abort can kill it.
  const handle = await sandbox.commands.run(command, {
    background: true,
    stdin: stdin !== undefined,
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.envs ? { envs: options.envs } : {}),
    timeoutMs,
    onStdout: (chunk: string) => {
      stdout.push(chunk)
      options.onStdout?.(chunk)
    },
    onStderr: (chunk: string) => {
      stderr.push(chunk)
      options.onStderr?.(chunk)
    },
  })
  const onAbort = () => void handle.kill().catch(() => undefined)
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    if (stdin !== undefined) {
      if (stdin.length > 0) await sandbox.commands.sendStdin(handle.pid, stdin)
      await sandbox.commands.closeStdin(handle.pid)
    }
    const result = await handle.wait()
    return { exitCode: result.exitCode, stdout: stdout.text(), stderr: stderr.text() }
  } catch (error) {
    if (signal?.aborted) throw aborted(sandboxId, error)
    const names = [error?.constructor?.name, (error as Error)?.name]
    // A non-zero exit is a result, not an error.
    if (names.includes('CommandExitError')) {
      const exit = error as { exitCode: number }
      return { exitCode: exit.exitCode, stdout: stdout.text(), stderr: stderr.text() }
    }
    // The contract: a command killed at its time limit is a result with exit code -1.
    if (names.includes('TimeoutError') && timeoutMs > 0) {
      return {
        exitCode: -1,
        stdout: stdout.text(),
        stderr: `${stderr.text()}sandkeep: command timed out after ${timeoutMs} ms\n`,
      }
    }
    throw error
  } finally {
    signal?.removeEventListener('abort', onAbort)
  }
}

function aborted(sandboxId: string, cause?: unknown): SandkeepError {
  return new SandkeepError({
    code: 'ABORTED',
    message: 'runCommand was aborted.',
    sandboxId,
    ...(cause === undefined ? {} : { cause }),
  })
}

/** The `bash -l -c <command>` argument when the process was started that way (as startProcess does). */
function commandLine(info: { cmd: string; args: string[] }): string {
  const args = info.args ?? []
  if (/(^|\/)(ba)?sh$/.test(info.cmd) && args.length >= 2 && args.at(-2) === '-c') return args.at(-1) ?? ''
  return [info.cmd, ...args].join(' ')
}
