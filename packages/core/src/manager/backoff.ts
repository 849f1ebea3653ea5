/**
 * How a wait of the manager backs off between store calls: the base delay doubles per attempt from
 * `firstMs` up to `capMs`, with jitter (half the base to one and a half times it) so that many waiters do
 * not call the store in step.
 */
export interface BackoffRule {
  /** The base delay of attempt 0, ms. Default 25. */
  firstMs?: number
  /** The largest base delay, ms. */
  capMs: number
  /**
   * The longest wait when there is no `retryAfterMs`: `'jittered'` (default) lets the jitter go up to one
   * and a half times the base; `'base'` stops it at the base.
   */
  ceiling?: 'jittered' | 'base'
  /** The store's own hint (SESSION_BUSY's `retryAfterMs`), ms: never longer; it replaces the `ceiling`. */
  retryAfterMs?: number | undefined
  /** What is left of the caller's deadline, ms: never longer. */
  leftMs?: number
  /** The random source, in [0, 1). Default `Math.random` (a test passes its own). */
  random?: () => number
}

/** A creation poll (another turn is creating the session's sandbox): up to 1 s, jittered above the base. */
export const CREATION_POLL: BackoffRule = { capMs: 1000 }

/** A retry after SESSION_BUSY (a turn end holds the session, or a rewind meets a turn): up to 0.5 s. */
export const BUSY_RETRY: BackoffRule = { capMs: 500, ceiling: 'base' }

/** The delay before the next try, ms (`attempt` counts from 0), never negative. */
export function backoffMs(attempt: number, rule: BackoffRule): number {
  const base = Math.min((rule.firstMs ?? 25) * 2 ** attempt, rule.capMs)
  const jittered = base / 2 + (rule.random ?? Math.random)() * base
  const ceiling = rule.retryAfterMs ?? (rule.ceiling === 'base' ? base : Number.POSITIVE_INFINITY)
  return Math.max(0, Math.min(jittered, ceiling, rule.leftMs ?? Number.POSITIVE_INFINITY))
}
