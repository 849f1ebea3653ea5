// `sessions.close()`: the manager's shutdown. It refuses new calls at once, waits (bounded) for what this
// process still has under way — calls in flight, turns begun and not yet ended, turn ends pausing or taking
// a checkpoint — and then closes what the manager holds: its event subscriptions and, unless told to keep
// it, the store it was given (an app makes one store per manager; a store shared with another manager is
// kept with `keepStore: true`).
import { SandkeepError } from '../contract/errors.js'
import { sleep } from '../contract/retry.js'
import type { CloseOptions, CloseResult } from '../contract/session-manager-types.js'
import { rejectUnknownOptions, validateInteger } from '../contract/validation.js'
import type { ResolvedLogger } from '../telemetry/logger.js'
import { errorFields } from '../telemetry/logger.js'
import type { ManagerContext } from './context.js'

const CLOSE_OPTION_NAMES = ['timeoutMs', 'keepStore'] as const
/** How often the drain looks again at turns that are open (they have no promise to wait on). */
const DRAIN_POLL_MS = 25

/** The one owner of the manager's open/closing state. */
export class ManagerCloser {
  readonly #ctx: ManagerContext
  readonly #logger: ResolvedLogger | null
  readonly #onClosed: () => void
  #inFlight = new Set<Promise<unknown>>()
  #closing: Promise<CloseResult> | undefined

  constructor(ctx: ManagerContext, logger: ResolvedLogger | null, onClosed: () => void) {
    this.#ctx = ctx
    this.#logger = logger
    this.#onClosed = onClosed
  }

  /** Runs a manager call unless the manager is closing, and counts it in flight until it settles. */
  run<T>(operation: string, call: () => Promise<T>): Promise<T> {
    if (this.#closing) return Promise.reject(closedError(operation))
    const promise = call()
    this.#inFlight.add(promise)
    const settled = () => this.#inFlight.delete(promise)
    promise.then(settled, settled)
    return promise
  }

  /** Starts (once) and returns the shutdown. */
  close(options: CloseOptions | undefined): Promise<CloseResult> {
    let parsed: ReturnType<typeof parseCloseOptions>
    try {
      parsed = parseCloseOptions(options)
    } catch (error) {
      return Promise.reject(error)
    }
    this.#closing ??= this.#shutdown(parsed)
    return this.#closing
  }

  async #shutdown(options: { timeoutMs: number; keepStore: boolean }): Promise<CloseResult> {
    const started = performance.now()
    const deadline = started + options.timeoutMs
    this.#logger?.write('info', 'manager closing', { timeoutMs: options.timeoutMs })
    const drained = await this.#drain(deadline)
    const openTurns = this.#ctx.state.openTurns()
    let storeClosed = false
    if (!options.keepStore) {
      try {
        await this.#ctx.config.store.close()
        storeClosed = true
      } catch (error) {
        this.#logger?.write('warn', 'store close failed', errorFields(error))
      }
    }
    const result: CloseResult = {
      drained,
      openTurns,
      storeClosed,
      ms: Math.round(performance.now() - started),
    }
    this.#logger?.write(drained ? 'info' : 'warn', 'manager closed', { ...result })
    this.#onClosed()
    return result
  }

  /** Waits until nothing is under way in this process, or the deadline; true when it drained. */
  async #drain(deadline: number): Promise<boolean> {
    const { state } = this.#ctx
    for (;;) {
      const ends = state.endsUnderWay()
      const openTurns = state.openTurns()
      const busy = ends.length + this.#inFlight.size + openTurns
      if (busy === 0) return true
      const left = deadline - performance.now()
      if (left <= 0) return false
      // Ends and calls settle on their own promises; an open turn has none, so look again shortly.
      const settled = Promise.allSettled([...ends, ...this.#inFlight])
      const stop = new AbortController()
      await Promise.race([
        settled,
        sleep(openTurns > 0 ? Math.min(DRAIN_POLL_MS, left) : left, stop.signal, 'resolve'),
      ])
      // The timer goes with the wait, or it would hold the process up to the deadline.
      stop.abort()
    }
  }
}

function parseCloseOptions(options: CloseOptions | undefined): { timeoutMs: number; keepStore: boolean } {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new SandkeepError({ code: 'INVALID_ARGUMENT', message: 'close options must be an object.' })
  }
  rejectUnknownOptions('close options', options ?? {}, CLOSE_OPTION_NAMES)
  if (options?.keepStore !== undefined && typeof options.keepStore !== 'boolean') {
    throw new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message: 'close option keepStore must be a boolean.',
    })
  }
  return {
    timeoutMs: validateInteger('close timeoutMs', options?.timeoutMs ?? 60_000, 0, 24 * 60 * 60 * 1000),
    keepStore: options?.keepStore ?? false,
  }
}

function closedError(operation: string): SandkeepError {
  return new SandkeepError({
    code: 'MANAGER_CLOSED',
    message: `sessions.${operation}() was called after sessions.close(): this manager begins no turn and makes no call any more; create a new one with createSessionManager.`,
  })
}
