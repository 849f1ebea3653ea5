// `spawn` (the AI SDK's contract): a command whose output streams while it runs, with wait() and kill(). It runs
// through the handle's runCommand (so it ends with the turn); startProcess is for what must outlive it.
import { mergeAbortSignals, SandkeepError } from '@sandkeep/core'
import { checkCommand, commandOptions } from './commands.js'
import type { SandboxProcess, SessionContext, SpawnOptions } from './types.js'

export async function spawnProcess(
  context: SessionContext,
  spawnOptions: SpawnOptions,
): Promise<SandboxProcess> {
  const { conversationId, tenant, operation } = context
  if (spawnOptions?.stdin === true) {
    // The contract asks implementations without writable stdin to refuse before starting anything.
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message:
        'spawn({ stdin: true }) is not supported by sandkeep sessions: write the input to a file and redirect it, or use run().',
      conversationId,
      tenant,
    })
  }
  const command = checkCommand(spawnOptions?.command)
  const callerSignal = spawnOptions.abortSignal
  const kill = new AbortController()
  let killed = false
  const pipes = outputPipes()

  // Resume first so the returned handle means "the command is starting", not "the sandbox is resuming".
  await operation(callerSignal, async () => undefined)
  let started!: () => void
  const startedPromise = new Promise<void>((resolve) => {
    started = resolve
  })
  const done = operation(callerSignal, (handle, signal) => {
    started()
    return handle.runCommand(command, {
      ...commandOptions(
        context,
        spawnOptions,
        context.commandTimeoutMs,
        mergeAbortSignals(signal, kill.signal),
      ),
      onStdout: pipes.onStdout,
      onStderr: pipes.onStderr,
    })
  })
  const exit: Promise<{ exitCode: number }> = done.then(
    (result) => {
      pipes.close()
      return { exitCode: result.exitCode }
    },
    (error: unknown) => {
      pipes.close()
      // kill() is a normal way for a process to end: report it like a signal death, not as an error.
      if (killed && !callerSignal?.aborted) return { exitCode: -1 }
      throw callerSignal?.aborted ? callerSignal.reason : error
    },
  )
  exit.catch(() => {})
  await Promise.race([startedPromise, exit.then(() => undefined)])
  return {
    stdout: pipes.stdout,
    stderr: pipes.stderr,
    wait: () => exit,
    kill: async () => {
      if (!killed) {
        killed = true
        kill.abort(
          new SandkeepError({ code: 'ABORTED', message: 'The process was killed.', conversationId, tenant }),
        )
      }
      await exit.then(
        () => undefined,
        () => undefined,
      )
    },
  }
}

/** The process's stdout and stderr byte streams, fed by the command's output callbacks. */
function outputPipes() {
  const encoder = new TextEncoder()
  let stdoutController!: ReadableStreamDefaultController<Uint8Array>
  let stderrController!: ReadableStreamDefaultController<Uint8Array>
  const stdout = new ReadableStream<Uint8Array>({
    start(controller) {
      stdoutController = controller
    },
  })
  const stderr = new ReadableStream<Uint8Array>({
    start(controller) {
      stderrController = controller
    },
  })
  const push = (controller: ReadableStreamDefaultController<Uint8Array>, chunk: string) => {
    try {
      controller.enqueue(encoder.encode(chunk))
    } catch {
      // The reader cancelled its stream; the process keeps running and its output is dropped.
    }
  }
  return {
    stdout,
    stderr,
    onStdout: (chunk: string) => push(stdoutController, chunk),
    onStderr: (chunk: string) => push(stderrController, chunk),
    close() {
      for (const controller of [stdoutController, stderrController]) {
        try {
          controller.close()
        } catch {
          // Already closed or cancelled.
        }
      }
    },
  }
}
