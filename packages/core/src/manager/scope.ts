import type { Lease } from '../session-store.js'
import type { SessionKey } from '../validation.js'
import type { ManagerContext } from './context.js'

/**
 * What a phase of a turn works with, and all it may use of the turn: the manager's context, the session,
 * the lease as last renewed and the turn's abort signal. The phases (resume ladder, assessment, turn end)
 * take this and values of their own, and return what the next phase needs; only turn.ts holds a turn.
 */
export interface TurnScope {
  readonly ctx: ManagerContext
  readonly key: SessionKey
  /** The lease as last renewed: renewals replace it, so read it at each store call. */
  lease(): Lease
  /** Fires when the caller's signal fires, the lease is lost or the turn ends. */
  readonly signal: AbortSignal
}
