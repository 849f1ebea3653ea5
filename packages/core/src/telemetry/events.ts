/**
 * A small typed event hub. Listeners run synchronously in subscription order; a listener that throws never
 * breaks the call that emitted the event, nor the other listeners. Its error is reported, never dropped:
 * to `onListenerError` (the session manager turns it into an `error` event with phase `listener:<event>`),
 * except an error thrown by an `error` listener itself, which would recurse: that one is written with
 * `console.warn`, once per hub, so a broken error handler cannot flood the log.
 */
export interface EventHub<Events extends object> {
  /** Subscribes; returns the unsubscribe function. */
  on<E extends keyof Events>(event: E, listener: (payload: Events[E]) => void): () => void
  /** Emits to every listener of `event`. */
  emit<E extends keyof Events>(event: E, payload: Events[E]): void
}

export function createEventHub<Events extends object>(
  onListenerError?: (error: unknown, event: keyof Events) => void,
): EventHub<Events> {
  const listeners = new Map<keyof Events, Set<(payload: never) => void>>()
  let warned = false
  const warnOnce = (error: unknown, event: keyof Events) => {
    if (warned) return
    warned = true
    console.warn(`sandkeep: a '${String(event)}' event listener threw (later ones are not reported):`, error)
  }
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
          if (event === 'error' || !onListenerError) warnOnce(error, event)
          else onListenerError(error, event)
        }
      }
    },
  }
}
