// One kernel process (python or javascript) of one context, started inside the sandbox through the host's
// KernelSpawner, and the protocol spoken with it (see kernels/python-kernel.py for the kernel's side).
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { posix } from 'node:path'
import { createFrameReader, type FrameReader, type KernelMessage } from './frames.js'
import type { KernelSpawner } from './types.js'

/** The kernels this package ships (bash is a mode of the Python kernel script). */
export type KernelLanguage = 'python' | 'javascript' | 'typescript' | 'bash' | 'r' | 'java'

/** Debian's R front end; the R kernel exists only where the machine has R (the sandbox sees the host's /usr). */
export const RSCRIPT = '/usr/bin/Rscript'

/** The machine's JDK (jshell is there only with a JDK, whose jdk.jshell module the Java kernel uses). */
export const JAVA = '/usr/bin/java'
export const JSHELL = '/usr/bin/jshell'

/** Receives what one cell produces, in order. */
export interface CellSink {
  /** The kernel accepted the cell; `count` is its execution counter (1 for the first cell of a kernel). */
  start(count: number): void
  /** Text the cell printed to stdout (or raw output of a child process). */
  stdout(text: string): void
  /** Text the cell printed to stderr. */
  stderr(text: string): void
  /** A displayed value: `main` for the cell's trailing expression, otherwise a display() call. */
  result(data: Record<string, unknown>, main: boolean): void
  /** The cell raised. */
  error(name: string, value: string, traceback: string): void
}

/** How a cell ended: `done` normally (also after an error), `died` when the kernel process went away. */
export type CellOutcome = 'done' | 'died'

/** How a kernel process ended. */
export interface KernelExit {
  /** Exit code, when it exited by itself. */
  code: number | null
  /** Signal that ended it, when one did. */
  signal: string | null
  /** True when this side asked for it (kill, close). */
  expected: boolean
}

export interface KernelStartOptions {
  language: KernelLanguage
  spawner: KernelSpawner
  /** Sandbox path of the kernels directory. */
  kernelDir: string
  /** Sandbox path the kernel starts in. */
  cwd: string
  /** Environment added to the sandbox's own. */
  env: Record<string, string>
  /** Gives up on a kernel that has not said `ready` by then (ms). */
  startTimeoutMs: number
  /** Called once when the process is gone (after start succeeded). */
  onExit?: (exit: KernelExit) => void
}

const STDERR_KEEP = 4096
/** How long a JavaScript cell gets to honour the interrupt message before it is sent SIGINT. */
const SIGNAL_DELAY_MS = 250

/** The interpreter binaries: Debian's in the sandbox; on a host without them (unisolated only) the PATH's. */
function commandFor(language: KernelLanguage, kernelDir: string): [string, string[]] {
  if (language === 'python' || language === 'bash') {
    const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
    const script = posix.join(kernelDir, 'python-kernel.py')
    return [python, language === 'bash' ? ['-X', 'utf8', script, '--bash'] : ['-X', 'utf8', script]]
  }
  if (language === 'r') {
    // The requests reach R on fd 3, out of reach of the cell's child processes (whose stderr joins stdout),
    // through a pipe: R opens the fd by path, which a socket (what the host's stdin is) refuses.
    const launch = 'cat | { exec 3<&0 0</dev/null 2>&1; exec "$0" "$1"; }'
    return ['/bin/sh', ['-c', launch, RSCRIPT, posix.join(kernelDir, 'r-kernel.R')]]
  }
  if (language === 'java') {
    // Run from its source (the JDK compiles it in memory); serial GC: one context needs no parallel collector.
    return [JAVA, ['-XX:+UseSerialGC', '-Xshare:auto', posix.join(kernelDir, 'java-kernel.java')]]
  }
  const node = existsSync('/usr/bin/node') ? '/usr/bin/node' : process.execPath
  // --expose-internals gives the kernel Node's own top-level-await rewrite (internal/repl/await).
  const args = ['--expose-internals', posix.join(kernelDir, 'javascript-kernel.mjs')]
  return [node, language === 'typescript' ? [...args, '--typescript'] : args]
}

/** Feeds the kernel's stdout to `reader` and what reaches its stderr to `onStderr`. */
function pipeOutput(
  child: ChildProcessWithoutNullStreams,
  reader: FrameReader,
  onStderr: (text: string) => void,
): void {
  child.stdout.on('data', (chunk: Buffer) => reader.push(chunk))
  child.stdout.on('end', () => reader.end())
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', onStderr)
  // A dead kernel's stdin reports EPIPE; the exit handler tells the story.
  child.stdin.on('error', () => {})
}

/** Why a kernel that exited before its `ready` did not start (`reason`: its fatal message or stderr). */
function earlyExitError(language: KernelLanguage, exit: KernelExit, reason: string): Error {
  return new Error(
    `the ${language} kernel exited before it was ready (${exit.signal ?? `exit code ${exit.code}`})${reason ? `: ${reason}` : ''}`,
  )
}

interface RunningCell {
  id: number
  sink: CellSink
  finish: (outcome: CellOutcome) => void
}

export class KernelProcess {
  readonly language: KernelLanguage
  /** Milliseconds from spawn to the kernel's `ready`. */
  readonly coldStartMs: number
  /** The kernel's pid as seen inside the sandbox. */
  readonly pid: number
  readonly #child: ChildProcessWithoutNullStreams
  readonly #options: KernelStartOptions
  #running: RunningCell | undefined
  #nextId = 1
  #exited = false
  #expected = false
  readonly #exit: Promise<KernelExit>

  private constructor(
    options: KernelStartOptions,
    child: ChildProcessWithoutNullStreams,
    pid: number,
    coldStartMs: number,
    exit: Promise<KernelExit>,
  ) {
    this.language = options.language
    this.#options = options
    this.#child = child
    this.pid = pid
    this.coldStartMs = coldStartMs
    this.#exit = exit
  }

  /** True until the process is gone (or was asked to go). */
  get alive(): boolean {
    return !this.#exited && !this.#expected
  }

  /** True while a cell runs. */
  get busy(): boolean {
    return this.#running !== undefined
  }

  /** Resolves once the process is gone. */
  get exited(): Promise<KernelExit> {
    return this.#exit
  }

  /** Spawns a kernel and waits for its `ready`. Rejects with the kernel's own words when it cannot start. */
  static start(options: KernelStartOptions): Promise<KernelProcess> {
    const nonce = randomBytes(12).toString('hex')
    const [command, args] = commandFor(options.language, options.kernelDir)
    const startedAt = performance.now()
    const child = options.spawner.spawn(command, args, { cwd: options.cwd, env: options.env })
    let kernel: KernelProcess | undefined
    let stderrText = ''
    const keepStderr = (text: string) => {
      stderrText = (stderrText + text).slice(-STDERR_KEEP)
    }
    let fatal: string | undefined
    let settleStart: ((error: Error | undefined, pid?: number) => void) | undefined
    const { promise: exit, resolve: resolveExit } = Promise.withResolvers<KernelExit>()

    const reader = createFrameReader({
      nonce,
      onMessage: (message) => {
        if (kernel) {
          kernel.#onMessage(message)
          return
        }
        if (message.t === 'ready') settleStart?.(undefined, Number(message.pid))
        else if (message.t === 'fatal') fatal = String(message.message ?? '')
      },
      onRaw: (text) => {
        if (kernel) kernel.#running?.sink.stdout(text)
        else keepStderr(text)
      },
    })
    pipeOutput(child, reader, (text) => {
      // Kernels send their own stderr as messages; this is what escaped them (a child process, a crash).
      if (!kernel) keepStderr(text)
      else kernel.#running?.sink.stderr(text)
    })
    child.on('error', (error) => {
      settleStart?.(error)
      if (!kernel) resolveExit({ code: null, signal: null, expected: false })
    })
    child.on('exit', (code, signal) => {
      const info: KernelExit = { code, signal, expected: kernel ? kernel.#expected : false }
      if (kernel) kernel.#ended()
      else settleStart?.(earlyExitError(options.language, info, fatal ?? stderrText.trim()))
      resolveExit(info)
      if (kernel) options.onExit?.(info)
    })

    child.stdin.write(`${JSON.stringify({ t: 'hello', nonce })}\n`)

    const started = Promise.withResolvers<KernelProcess>()
    const timer = setTimeout(() => {
      settleStart?.(
        new Error(`the ${options.language} kernel did not start within ${options.startTimeoutMs} ms`),
      )
      child.kill('SIGKILL')
    }, options.startTimeoutMs)
    settleStart = (error, pid) => {
      settleStart = undefined
      clearTimeout(timer)
      if (error) {
        started.reject(error)
        return
      }
      kernel = new KernelProcess(options, child, pid ?? -1, performance.now() - startedAt, exit)
      started.resolve(kernel)
    }
    return started.promise
  }

  /** The process is gone: the running cell, if any, ends as `died`. */
  #ended(): void {
    this.#exited = true
    const running = this.#running
    this.#running = undefined
    running?.finish('died')
  }

  /**
   * Runs one cell. The caller runs one cell at a time per kernel. Resolves `died` (after reporting an error to the
   * sink) when the process goes away before the cell ends.
   */
  run(code: string, env: Record<string, string>, sink: CellSink): Promise<CellOutcome> {
    if (this.#running) throw new Error('a cell is already running in this kernel')
    if (!this.alive) {
      sink.error('ContextRestarting', 'the kernel of this context is not running', '')
      return Promise.resolve('died')
    }
    const id = this.#nextId++
    return new Promise<CellOutcome>((resolve) => {
      this.#running = {
        id,
        sink,
        finish: (outcome) => {
          if (outcome === 'died') {
            const exit = this.#child.signalCode ?? `exit code ${this.#child.exitCode}`
            sink.error(
              'ContextRestarting',
              `Context was restarted: its kernel process ended (${exit}) and its memory is lost`,
              '',
            )
          }
          resolve(outcome)
        },
      }
      this.#child.stdin.write(`${JSON.stringify({ t: 'execute', id, code, env })}\n`)
    })
  }

  /** Asks the running cell to stop (KeyboardInterrupt in Python, an interrupted script in JavaScript). */
  interrupt(): void {
    const running = this.#running
    if (!running || !this.alive) return
    this.#child.stdin.write(`${JSON.stringify({ t: 'interrupt', id: running.id })}\n`)
    // Python, bash and Java read the message on a thread of their own and stop the cell themselves.
    if (this.language === 'python' || this.language === 'bash' || this.language === 'java') return
    // A synchronous JavaScript cell, and any R cell, blocks the thread that reads the message; SIGINT reaches
    // it, sent from inside the sandbox because the spawned handle is a wrapper (nsenter) that does not forward
    // signals.
    const timer = setTimeout(() => {
      if (this.#running !== running || !this.alive) return
      try {
        const killer = this.#options.spawner.spawn('/bin/sh', ['-c', 'kill -INT "$0"', String(this.pid)], {
          cwd: this.#options.cwd,
          env: {},
        })
        killer.on('error', () => {})
        killer.stdin.end()
        killer.stdout.resume()
        killer.stderr.resume()
      } catch {
        // The host's grace period then replaces the kernel.
      }
    }, SIGNAL_DELAY_MS)
    timer.unref()
  }

  /** Ends the process (its memory is lost). Safe to call more than once. */
  kill(): void {
    this.#expected = true
    if (this.#exited) return
    this.#child.stdin.end()
    this.#child.kill('SIGKILL')
  }

  #onMessage(message: KernelMessage): void {
    const running = this.#running
    if (!running) return
    switch (message.t) {
      case 'start':
        if (message.id === running.id) running.sink.start(Number(message.count))
        return
      case 'stdout':
      case 'stderr': {
        const text = typeof message.text === 'string' ? message.text : ''
        if (!text) return
        if (message.t === 'stdout') running.sink.stdout(text)
        else running.sink.stderr(text)
        return
      }
      case 'result': {
        const data = message.data
        if (typeof data === 'object' && data !== null) {
          running.sink.result(data as Record<string, unknown>, message.main === true)
        }
        return
      }
      case 'error':
        running.sink.error(
          String(message.name ?? 'Error'),
          String(message.value ?? ''),
          String(message.traceback ?? ''),
        )
        return
      case 'done':
        if (message.id !== running.id) return
        this.#running = undefined
        running.finish('done')
        return
    }
  }
}
