#!/usr/bin/env node
import { main } from './cli.js'

const controller = new AbortController()
let interrupted = 0
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    interrupted++
    // The first signal lets the running command clean up (pause the sandbox, close the host); a second one
    // exits at once.
    if (interrupted > 1) process.exit(130)
    controller.abort(new Error(`interrupted by ${signal}`))
    // A command stuck where no abort reaches (a read the kernel never answers) must not outlive the signal:
    // the cleanup gets this long, then the process ends.
    setTimeout(() => process.exit(130), 30_000).unref()
  })
}

// `sandkeep demo | head` closes the pipe early: stop as if interrupted, so the sandbox is still paused or
// killed and the embedded host closed, instead of dying on an unhandled EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error
    if (!controller.signal.aborted) controller.abort(new Error('output closed'))
  })
}

const code = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
})
process.exitCode = code
// Anything still holding the event loop (an idle socket of a closed client) must not keep the CLI alive.
setTimeout(() => process.exit(code), 2000).unref()
