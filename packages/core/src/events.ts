/**
 * A small typed event hub. Listeners run synchronously in subscription order; a listener that throws is
 * reported to `onListenerError` and never breaks the turn that emitted the event.
 */
export interface EventHub<Events extends object> {
  /** Subscribes; returns the unsubscribe function. */
  on<E extends keyof Events>(event: E, listener: (payload: Events[E]) => void): () => void
  /** Emits to every listener of `event`. */
  emit<E extends keyof Events>(event: E, payload: Events[E]): void
  /** True when `event` has at least one listener (lets callers skip building costly payloads). */
  has(event: keyof Events): boolean
}

export function createEventHub<Events extends object>(
  onListenerError: (error: unknown, event: keyof Events) => void = () => {},
): EventHub<Events> {
  const listeners = new Map<keyof Events, Set<(payload: never) => void>>()
  return {
    on(event, listener) {
      if (typeof listener !== 'function') throw new TypeError('listener must be a function')
      let set = listeners.get(event)
      if (!set) {
        set = new Set()
        listeners.set(event, set)
      }
      const entry = listener as (payload: never) => void
      set.add(entry)
      return () => {
        set.delete(entry)
      }
    },
    emit(event, payload) {
      const set = listeners.get(event)
      if (!set || set.size === 0) return
      for (const listener of [...set]) {
        try {
          ;(listener as (payload: Events[typeof event]) => void)(payload)
        } catch (error) {
          // A listener's bug must not fail the user's turn, nor recurse through the `error` event.
          if (event !== 'error') onListenerError(error, event)
        }
      }
    },
    has(event) {
      return (listeners.get(event)?.size ?? 0) > 0
    },
  }
}
