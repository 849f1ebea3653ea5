// A turn around one framework call (the AI SDK's sandkeepTurn, a graph run): it ends when the wrapped call
// settles, the caller aborts, a consumer cancels, or the safety limit fires. The end is the session's (its
// one lifecycle, over the manager's turn); this module only decides when, and owns the call's own signal.
import { mergeAbortSignals, SandkeepError, type TurnEndReport, turnEndedError } from '@sandkeep/core'
import type { SandboxSession } from '../sandbox-session/types.js'

/** When a turn around one call ends, and the signal of the call it wraps. */
export interface TurnControl {
  /** Aborted when the turn ends early (cancel, safety limit) or the caller aborts. */
  readonly signal: AbortSignal
  /** Resolves when the turn has ended: the session's `whenEnded`. */
  readonly ended: Promise<TurnEndReport | undefined>
  /** What the end did, once it is done: the session's `endReport`. */
  readonly endReport: TurnEndReport | undefined
  /**
   * Ends the turn (the session's idempotent `end()`); `reason` aborts the call if it still runs.
   * `abortCall: false` leaves the call's signal alone (a stream about to close, whose abort would turn its end
   * into an abort); a later `end()` aborts it.
   */
  end(reason?: unknown, options?: { abortCall?: boolean }): Promise<TurnEndReport | undefined>
  /** Marks the one call as made (a second one throws) and starts the safety limit; returns `signal`. */
  claim(name: string): AbortSignal
  /** The call's signal joined with the caller's, whose abort ends the turn even with nobody reading. */
  callSignal(signal: AbortSignal, callerSignal: AbortSignal | undefined | null): AbortSignal
}

export function createTurnControl(session: SandboxSession, maxDurationMs: number): TurnControl {
  // The wrapped call's own signal: unlike the session's, an end may leave it alone (`abortCall: false`).
  const call = new AbortController()
  let timer: NodeJS.Timeout | undefined
  let used = false

  function end(reason?: unknown, options?: { abortCall?: boolean }): Promise<TurnEndReport | undefined> {
    if (options?.abortCall !== false && !call.signal.aborted) {
      call.abort(
        reason ??
          turnEndedError(
            { tenant: session.tenant, conversationId: session.conversationId },
            'make a new turn for the next call',
          ),
      )
    }
    clearTimeout(timer)
    return session.end()
  }

  function claim(name: string): AbortSignal {
    if (used) {
      throw new SandkeepError({
        code: 'INVALID_ARGUMENT',
        message: `sandkeepTurn wraps one call; ${name} was called again. Make a new sandkeepTurn for the next turn.`,
        conversationId: session.conversationId,
        tenant: session.tenant,
      })
    }
    used = true
    if (maxDurationMs > 0) {
      const overdue = () =>
        new SandkeepError({
          code: 'TIMEOUT',
          message: `The call ran longer than maxDurationMs (${maxDurationMs} ms); the turn was ended.`,
        })
      timer = setTimeout(() => void end(overdue()).catch(() => {}), maxDurationMs)
      timer.unref()
    }
    return call.signal
  }

  function callSignal(signal: AbortSignal, callerSignal: AbortSignal | undefined | null): AbortSignal {
    if (!callerSignal) return signal
    // The caller's abort ends the turn even when no one pulls the stream any more.
    const onCallerAbort = () => void end(callerSignal.reason).catch(() => {})
    if (callerSignal.aborted) onCallerAbort()
    else {
      callerSignal.addEventListener('abort', onCallerAbort, { once: true })
      // A long-lived caller signal (one per server, say) must not keep a listener per turn.
      session.whenEnded
        .finally(() => callerSignal.removeEventListener('abort', onCallerAbort))
        .catch(() => {})
    }
    return mergeAbortSignals(signal, callerSignal)
  }

  return {
    signal: call.signal,
    get ended() {
      return session.whenEnded
    },
    get endReport() {
      return session.endReport
    },
    end,
    claim,
    callSignal,
  }
}
