import type { Lease } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import type { ManagerContext } from './context.js'

/**
 * What a phase of a turn works with, and all it may use of the turn: the manager's context, the session,
 * the lease as last renewed, the store's clock and the turn's abort signal. The phases (resume ladder, assessment, turn end)
 * take this and values of their own, and return what the next phase needs; only turn.ts holds a turn.
 */
export interface TurnScope {
  readonly ctx: ManagerContext
  readonly key: SessionKey
  /** The lease as last renewed: renewals replace it, so read it at each store call. */
  lease(): Lease
  /**
   * Now on the store's clock, epoch ms (an integer): what the turn stores or compares across processes
   * (when the sandbox started running, when the turn ended) is dated on it, never on this process's clock.
   */
  storeNow(): number
  /** Fires when the caller's signal fires, the lease is lost or the turn ends. */
  readonly signal: AbortSignal
}

/**
 * The store's clock as a turn reads it without a round trip of its own: the time at which the store granted
 * `lease` (its `expiresAt` less `leaseMs`, as the SessionStore contract defines it), advanced by this
 * process's monotonic clock since the grant arrived (`receivedAt`, a `performance.now()` value). A jump of
 * this process's wall clock changes neither.
 */
export function storeClock(lease: Lease, leaseMs: number, receivedAt: number): () => number {
  const granted = lease.expiresAt - leaseMs
  return () => Math.round(granted + (performance.now() - receivedAt))
}
