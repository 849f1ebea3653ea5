// The contexts of one sandbox's interpreter and their kernels: a default context per language (as E2B has
// from the start), one kernel process per context cold-started on demand, and one cell at a time per context.
import { randomUUID } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import { HttpError } from '../http.js'
import { SANDBOX_HOME } from '../paths.js'
import type { LanguageChoice } from './input.js'
import { type KernelLanguage, KernelProcess } from './kernel.js'
import type { InterpreterHost } from './types.js'

/** A kernel that has not said `ready` by then failed (generous: tests share two cores). */
const KERNEL_START_TIMEOUT_MS = 20_000
const MAX_CONTEXT_ID_LENGTH = 128

export interface ContextState {
  id: string
  language: string
  kernelLanguage: KernelLanguage
  /** Reported cwd (a sandbox path). */
  cwd: string
  /** Where the kernel is spawned (the host's home path for the default cwd). */
  spawnCwd: string
  kernel: KernelProcess | undefined
  starting: Promise<KernelProcess> | undefined
  /** Cells of one context run one after the other. */
  queue: Promise<void>
  removed: boolean
}

export class ContextTable {
  readonly #contexts = new Map<string, ContextState>()
  /** Default context id per language. */
  readonly #defaults = new Map<string, string>()
  readonly #host: InterpreterHost
  /** True once the sandbox is killed: no kernel starts anymore. */
  closed = false

  constructor(host: InterpreterHost) {
    this.#host = host
  }

  /** Reports an interpreter event to the host (a failing listener must not break a cell). */
  emit(type: string, detail: Record<string, unknown>): void {
    try {
      this.#host.emit?.(type, detail)
    } catch {
      // The event log is the host's.
    }
  }

  values(): IterableIterator<ContextState> {
    return this.#contexts.values()
  }

  #spawnCwd(cwd: string | undefined): string {
    return cwd === undefined || cwd === SANDBOX_HOME ? this.#host.homeDir : cwd
  }

  /**
   * True when a kernel can start in `cwd`: a process is started there the way a kernel is, so the sandbox's
   * own view (its mounts, its user's permissions) decides.
   */
  canEnter(cwd: string): Promise<boolean> {
    return new Promise((resolve) => {
      try {
        const probe = this.#host.spawner.spawn('/bin/true', [], { cwd: this.#spawnCwd(cwd), env: {} })
        probe.on('error', () => resolve(false))
        probe.on('exit', (code) => resolve(code === 0))
        probe.stdin.end()
        probe.stdout.resume()
        probe.stderr.resume()
      } catch {
        resolve(false)
      }
    })
  }

  add(choice: LanguageChoice, cwd: string | undefined): ContextState {
    const context: ContextState = {
      id: randomUUID(),
      language: choice.language,
      kernelLanguage: choice.kernel,
      cwd: cwd ?? SANDBOX_HOME,
      spawnCwd: this.#spawnCwd(cwd),
      kernel: undefined,
      starting: undefined,
      queue: Promise.resolve(),
      removed: false,
    }
    this.#contexts.set(context.id, context)
    return context
  }

  /** The default context of a language, made when missing (or after it was removed). */
  defaultContext(choice: LanguageChoice): ContextState {
    const existing = this.#defaults.get(choice.language)
    const context = existing === undefined ? undefined : this.#contexts.get(existing)
    if (context) return context
    const created = this.add(choice, undefined)
    this.#defaults.set(choice.language, created.id)
    return created
  }

  /** E2B has a default python and javascript context from the start, listed like any other. */
  ensureDefaults(): void {
    this.defaultContext({ language: 'python', kernel: 'python' })
    this.defaultContext({ language: 'javascript', kernel: 'javascript' })
  }

  find(id: string): ContextState {
    const context = id.length <= MAX_CONTEXT_ID_LENGTH ? this.#contexts.get(id) : undefined
    if (!context) throw new HttpError(404, `Context ${id.slice(0, MAX_CONTEXT_ID_LENGTH)} not found`)
    return context
  }

  remove(context: ContextState, reason: string): void {
    context.removed = true
    this.#contexts.delete(context.id)
    for (const [language, contextId] of this.#defaults) {
      if (contextId === context.id) this.#defaults.delete(language)
    }
    this.forgetKernel(context, reason)
  }

  /** Runs `task` after the context's earlier cells. */
  enqueue(context: ContextState, task: () => Promise<void>): Promise<void> {
    const run = context.queue.then(task, task)
    context.queue = run.catch(() => {})
    return run
  }

  /** Drops the context's kernel (killing it when alive); the next cell cold-starts another. */
  forgetKernel(context: ContextState, reason: string): void {
    const kernel = context.kernel
    context.kernel = undefined
    context.starting = undefined
    if (kernel?.alive) {
      this.emit('kernel-kill', { contextId: context.id, language: context.language, pid: kernel.pid, reason })
      kernel.kill()
    }
  }

  /** The context's kernel, cold-starting one when there is none (first cell, after a restart, a reset or a crash). */
  ensureKernel(context: ContextState): Promise<KernelProcess> {
    if (context.kernel?.alive) return Promise.resolve(context.kernel)
    if (context.starting) return context.starting
    if (this.closed) return Promise.reject(new HttpError(502, 'the sandbox is gone'))
    let kernel: KernelProcess | undefined
    const starting = KernelProcess.start({
      language: context.kernelLanguage,
      spawner: this.#host.spawner,
      kernelDir: this.#host.kernelDir,
      cwd: context.spawnCwd,
      env: { ...this.#host.envs },
      startTimeoutMs: KERNEL_START_TIMEOUT_MS,
      onExit: (exit) => {
        if (context.kernel === kernel) context.kernel = undefined
        this.emit('kernel-exit', {
          contextId: context.id,
          language: context.language,
          pid: kernel?.pid,
          code: exit.code,
          signal: exit.signal,
          expected: exit.expected,
        })
      },
    })
    const tracked: Promise<KernelProcess> = starting.then(
      (started) => {
        kernel = started
        return this.#adopt(context, tracked, started)
      },
      (error: unknown) => {
        if (context.starting === tracked) context.starting = undefined
        throw error
      },
    )
    context.starting = tracked
    return tracked
  }

  /** A kernel finished starting: it becomes the context's, unless it is not wanted anymore. */
  #adopt(
    context: ContextState,
    tracked: Promise<KernelProcess>,
    started: KernelProcess,
  ): Promise<KernelProcess> | KernelProcess {
    if (context.starting !== tracked || context.removed || this.closed) {
      // reset(), a restart or a delete happened while it was starting: this kernel is not wanted anymore.
      started.kill()
      if (context.removed || this.closed) throw new HttpError(404, `Context ${context.id} not found`)
      return this.ensureKernel(context)
    }
    context.starting = undefined
    context.kernel = started
    this.emit('kernel-start', {
      contextId: context.id,
      language: context.language,
      pid: started.pid,
      coldStartMs: Math.round(started.coldStartMs * 10) / 10,
    })
    return started
  }

  /** The sandbox's processes stopped: forget every kernel; contexts stay. */
  reset(): void {
    for (const context of this.#contexts.values()) this.forgetKernel(context, 'sandbox processes stopped')
  }

  /** `/execute` responses still open; dropped when the sandbox is killed. */
  readonly executing = new Set<ServerResponse>()

  /** The sandbox is killed: its open `/execute` connections drop, and no cell starts any more. */
  dropRequests(): void {
    this.closed = true
    for (const response of this.executing) response.destroy()
    this.executing.clear()
  }

  /** The sandbox is killed: stop every kernel (waits up to 2 s for them to exit). */
  async close(): Promise<void> {
    this.closed = true
    const exits: Promise<unknown>[] = []
    for (const context of this.#contexts.values()) {
      if (context.kernel) exits.push(context.kernel.exited)
      this.forgetKernel(context, 'sandbox killed')
    }
    await Promise.race([Promise.all(exits), new Promise((resolve) => setTimeout(resolve, 2_000))])
  }
}
