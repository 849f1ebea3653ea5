// The host's event log: an EventEmitter that also keeps every event in order, so tests can either listen
// or read what happened afterwards (`host.events.list({ type: 'sandbox-pause' })`).
import { EventEmitter } from 'node:events'

/** One recorded event. */
export interface HostEvent {
  /** Noun-verb name, e.g. `sandbox-create`, `sandbox-pause`, `fault-inject`, `fault-trigger`. */
  type: string
  /** Epoch milliseconds. */
  at: number
  /** The sandbox concerned, when there is one. */
  sandboxId?: string
  /** Event-specific fields (durations in ms, pids, fault operation, ...). Never secrets. */
  detail: Record<string, unknown>
}

/** Filter for {@link HostEventLog.list}. */
export interface HostEventFilter {
  /** Only events of this type (or any of these types). */
  type?: string | string[]
  /** Only events about this sandbox. */
  sandboxId?: string
}

/** Event emitter + ordered list. Listen with `on('event', e => ...)` or `on('<type>', e => ...)`. */
export class HostEventLog extends EventEmitter {
  readonly #events: HostEvent[] = []
  readonly #limit: number

  constructor(limit = 10_000) {
    super()
    this.#limit = limit
  }

  /** Records and emits an event (as `event` and as its own type). */
  record(type: string, sandboxId: string | undefined, detail: Record<string, unknown> = {}): HostEvent {
    const event: HostEvent = { type, at: Date.now(), detail }
    if (sandboxId !== undefined) event.sandboxId = sandboxId
    this.#events.push(event)
    if (this.#events.length > this.#limit) this.#events.splice(0, this.#events.length - this.#limit)
    this.emit('event', event)
    // An EventEmitter throws on an unhandled 'error' event; a recorded event must never throw.
    if (type !== 'error') this.emit(type, event)
    return event
  }

  /** The recorded events, oldest first, optionally filtered. */
  list(filter: HostEventFilter = {}): HostEvent[] {
    const types = filter.type === undefined ? undefined : new Set([filter.type].flat())
    return this.#events.filter(
      (event) =>
        (types === undefined || types.has(event.type)) &&
        (filter.sandboxId === undefined || event.sandboxId === filter.sandboxId),
    )
  }

  /** Resolves with the next event of `type` matching `predicate` (already recorded ones do not count). */
  waitFor(
    type: string,
    predicate: (event: HostEvent) => boolean = () => true,
    timeoutMs = 30_000,
  ): Promise<HostEvent> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.off(type, listener)
        reject(new Error(`no ${type} event within ${timeoutMs} ms`))
      }, timeoutMs)
      const listener = (event: HostEvent) => {
        if (!predicate(event)) return
        clearTimeout(timer)
        this.off(type, listener)
        resolve(event)
      }
      this.on(type, listener)
    })
  }
}
