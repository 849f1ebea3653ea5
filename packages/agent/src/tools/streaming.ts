// Output streamed while runCommand / runCode run, as preliminary tool results (`streamOutput`).
import { truncateOutput } from '../output.js'
import type { OutputCallbacks } from './tool-sandbox.js'
import type { ToolProgressResult } from './types.js'

/**
 * Runs `call` with output callbacks, yielding the output so far as partial results while it runs: at most
 * one every `intervalMs`, and only when there is new output. The last value is the call's result. `call`
 * must not reject (tool calls turn every failure into a result).
 */
export async function* streamToolCall<R>(
  call: (output: OutputCallbacks) => Promise<R>,
  maxOutputChars: number,
  intervalMs: number,
): AsyncGenerator<R | ToolProgressResult> {
  let stdout = ''
  let stderr = ''
  let signalOutput = () => {}
  let nextOutput = new Promise<void>((resolve) => {
    signalOutput = resolve
  })
  const arrived = () => signalOutput()
  const output: OutputCallbacks = {
    onStdout: (chunk) => {
      stdout += chunk
      arrived()
    },
    onStderr: (chunk) => {
      stderr += chunk
      arrived()
    },
  }
  const finished = call(output)
  const done = finished.then(() => 'done' as const)
  let last = 0
  for (;;) {
    if ((await Promise.race([nextOutput.then(() => 'output' as const), done])) === 'done') break
    if ((await sleepUnlessDone(last + intervalMs - Date.now(), done)) === 'done') break
    nextOutput = new Promise<void>((resolve) => {
      signalOutput = resolve
    })
    last = Date.now()
    yield {
      running: true,
      stdout: truncateOutput(stdout, maxOutputChars).text,
      stderr: truncateOutput(stderr, maxOutputChars).text,
    }
  }
  yield await finished
}

/** Waits `ms` (nothing when <= 0), or until `done` settles first. */
async function sleepUnlessDone(ms: number, done: Promise<'done'>): Promise<'slept' | 'done'> {
  if (ms <= 0) return 'slept'
  let timer: ReturnType<typeof setTimeout> | undefined
  const slept = new Promise<'slept'>((resolve) => {
    timer = setTimeout(() => resolve('slept'), ms)
  })
  const woke = await Promise.race([slept, done])
  clearTimeout(timer)
  return woke
}
