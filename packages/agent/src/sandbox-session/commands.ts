// Commands and code: the AI SDK's `run`, and sandkeep's runCommand, runCode and startProcess.
import { invalid } from '../errors.js'
import { checkMs } from './options.js'
import type { RunOptions, SandboxSession, SessionContext, SessionRunCommandOptions } from './types.js'

type CommandOperations = Pick<SandboxSession, 'run' | 'runCommand' | 'runCode' | 'startProcess'>

export function commandOperations(context: SessionContext): CommandOperations {
  const { operation, resolvePath } = context
  const runCommand: SandboxSession['runCommand'] = (command, runOptions = {}) => {
    checkCommand(command)
    const timeoutMs = checkMs(runOptions.timeoutMs, 'timeoutMs', context.commandTimeoutMs)
    return operation(
      runOptions.abortSignal,
      (handle, signal) => handle.runCommand(command, commandOptions(context, runOptions, timeoutMs, signal)),
      // The command may carry the resume's marker test (see @sandkeep/core's fidelity-carried-command.ts).
      true,
    )
  }
  return {
    run: ({ command, workingDirectory: cwd, env, abortSignal }: RunOptions) =>
      runCommand(command, {
        ...(cwd === undefined ? {} : { workingDirectory: cwd }),
        ...(env === undefined ? {} : { env }),
        ...(abortSignal === undefined ? {} : { abortSignal }),
      }),
    runCommand,
    runCode: (code, codeOptions = {}) => {
      if (typeof code !== 'string') return Promise.reject(invalid('runCode needs the code as a string.'))
      const language = codeOptions.language ?? 'python'
      if (language !== 'python' && language !== 'javascript') {
        return Promise.reject(
          invalid(`runCode: language must be 'python' or 'javascript', got ${String(language)}.`),
        )
      }
      return operation(
        codeOptions.abortSignal,
        (handle, signal) =>
          handle.runCode(code, {
            language,
            signal,
            ...(codeOptions.timeoutMs === undefined ? {} : { timeoutMs: codeOptions.timeoutMs }),
            ...(codeOptions.onStdout ? { onStdout: codeOptions.onStdout } : {}),
            ...(codeOptions.onStderr ? { onStderr: codeOptions.onStderr } : {}),
          }),
        // The cell may carry the resume's probes (see @sandkeep/core's fidelity-carried.ts).
        true,
      )
    },
    startProcess: (command, processOptions = {}) => {
      if (typeof command !== 'string' || command.length === 0)
        return Promise.reject(invalid('startProcess needs a non-empty command string.'))
      const cwd = processOptions.cwd === undefined ? undefined : resolvePath(processOptions.cwd)
      return operation(processOptions.abortSignal, (handle) =>
        handle.startProcess(command, {
          ...(cwd === undefined ? {} : { cwd }),
          ...(processOptions.envs === undefined ? {} : { envs: processOptions.envs }),
        }),
      )
    },
  }
}

/** The handle's runCommand options for a session command: cwd resolved, env, limit, signal, output callbacks. */
export function commandOptions(
  context: SessionContext,
  run: Pick<SessionRunCommandOptions, 'workingDirectory' | 'env' | 'onStdout' | 'onStderr'>,
  timeoutMs: number,
  signal: AbortSignal,
) {
  return {
    cwd:
      run.workingDirectory === undefined
        ? context.workingDirectory
        : context.resolvePath(run.workingDirectory),
    ...(run.env === undefined ? {} : { envs: run.env }),
    timeoutMs,
    signal,
    ...(run.onStdout ? { onStdout: run.onStdout } : {}),
    ...(run.onStderr ? { onStderr: run.onStderr } : {}),
  }
}

/** A command line: a non-empty string that is not only whitespace. */
export function checkCommand(command: unknown): string {
  if (typeof command !== 'string' || command.trim().length === 0) {
    throw invalid('A sandbox command must be a non-empty string.')
  }
  return command
}
