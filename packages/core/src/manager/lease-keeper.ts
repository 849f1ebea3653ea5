import { SandkeepError } from '../contract/errors.js'
import type { Lease, SessionStore } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import type { ResolvedOptions } from './options.js'

/** What the lease keeper needs of the manager, and nothing more: renewing a lease, reporting a failure. */
export interface LeaseKeeperContext {
  readonly store: Pick<SessionStore, 'renew'>
  readonly config: Pick<ResolvedOptions, 'leaseMs' | 'ttlMs'>
  emitError(phase: string, error: unknown, key?: SessionKey): void
}

/**
 * One turn's lease and abort signal: renews the lease in the background, turns a renewal that finds the lease
 * gone into LEASE_LOST (and aborts the turn with it), follows the caller's abort signal, and aborts the turn
 * when it ends. Nothing else renews, loses or aborts a turn.
 */
export interface LeaseKeeper {
  /** The lease as last renewed. */
  lease(): Lease
  /** Fires on the caller's signal, on LEASE_LOST and at the turn's end (TURN_ENDED). */
  readonly signal: AbortSignal
  /** LEASE_LOST once a renewal found the lease gone (lapsed or taken over); undefined before. */
  readonly lost: SandkeepError | undefined
  /** Stops following the caller's signal (the turn end runs whatever the caller does now). */
  detach(): void
  /** Stops renewing and stops following the caller's signal: the last step of the turn end. */
  stop(): void
  /**
   * The turn end is about to release the lease: a renewal in flight that finds it gone from now on crossed
   * the release, which is expected, not a loss.
   */
  releasing(): void
  /** Aborts the turn's signal with `reason` (the turn ended). */
  abort(reason: SandkeepError): void
}

/**
 * Starts keeping `lease` for the turn of `key`. Renews at a third of the lease length, so two missed renewals
 * still leave time before it lapses; the timer does not keep the process alive.
 */
export function createLeaseKeeper(
  context: LeaseKeeperContext,
  key: SessionKey,
  lease: Lease,
  callerSignal: AbortSignal | undefined,
): LeaseKeeper {
  const controller = new AbortController()
  let current = lease
  let lost: SandkeepError | undefined
  let releasing = false
  let detachCallerSignal: (() => void) | undefined
  if (callerSignal?.aborted) controller.abort(callerSignal.reason)
  else if (callerSignal) {
    const onAbort = () => controller.abort(callerSignal.reason)
    callerSignal.addEventListener('abort', onAbort, { once: true })
    // A caller's signal may outlive many turns: drop the listener when this turn ends.
    detachCallerSignal = () => callerSignal.removeEventListener('abort', onAbort)
  }
  let timer: NodeJS.Timeout | undefined
  const stopRenewal = () => {
    if (timer) clearInterval(timer)
    timer = undefined
  }
  const { store, config } = context
  const renew = () => {
    store.renew(key, current, { leaseMs: config.leaseMs, ttlMs: config.ttlMs }).then(
      (renewed) => {
        current = renewed
      },
      (error: unknown) => {
        if (releasing) return
        context.emitError('renew', error, key)
        if (!SandkeepError.hasCode(error, 'LEASE_LOST')) return
        stopRenewal()
        // Another turn may now pause, recreate or remap the sandbox: this turn must stop using it.
        lost = new SandkeepError({
          code: 'LEASE_LOST',
          message:
            'This turn lost its lease on the session (it lapsed or was taken over), so it may no longer use the sandbox: end it and begin a new turn.',
          tenant: key.tenant,
          conversationId: key.conversationId,
          cause: error,
        })
        controller.abort(lost)
      },
    )
  }
  timer = setInterval(renew, Math.max(100, Math.floor(config.leaseMs / 3)))
  timer.unref()
  return {
    lease: () => current,
    signal: controller.signal,
    get lost() {
      return lost
    },
    detach() {
      detachCallerSignal?.()
    },
    stop() {
      stopRenewal()
      detachCallerSignal?.()
    },
    releasing() {
      releasing = true
    },
    abort(reason) {
      controller.abort(reason)
    },
  }
}
