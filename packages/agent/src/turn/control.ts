// When a turn around one framework call ends (the AI SDK's sandkeepTurn, a graph run): the wrapped call
// settles, the caller aborts, a consumer cancels, or the safety limit fires. Ending aborts the call (if it
// still runs) and ends the sandbox session once.
import { SandkeepError, type TurnEndReport } from '@sandkeep/core'
import type { SandboxSession } from '../sandbox-session/index.js'

/** The end of one turn around one call, and the signal of the call it wraps. */
export interface TurnControl {
  /** Aborted when the turn ends early (cancel, safety limit) or the caller aborts. */
  readonly signal: AbortSignal
  /** Resolves when the turn has ended. */
  readonly ended: Promise<TurnEndReport | undefined>
  /** What the end did, once it is done. */
  readonly endReport: TurnEndReport | undefined
  /**
   * Ends the turn (idempotent); `reason` aborts the call if it still runs. `abortCall: false` leaves the
   * call's signal alone (a stream about to close, whose abort would turn its end into an abort); a later
   * `end()` aborts it.
   */
  end(reason?: unknown, options?: { abortCall?: boolean }): Promise<TurnEndReport | undefined>
  /** Marks the one call as made (a second one throws) and starts the safety limit; returns `signal`. */
  claim(name: string): AbortSignal
  /** The call's signal joined with the caller's, whose abort ends the turn even with nobody reading. */
  callSignal(signal: AbortSignal, callerSignal: AbortSignal | undefined | null): AbortSignal
}

export function createTurnControl(sandbox: SandboxSession, maxDurationMs: number): TurnControl {
  const callController = new AbortController()
  let resolveEnded!: (report: TurnEndReport | undefined) => void
  let rejectEnded!: (error: unknown) => void
  const ended = new Promise<TurnEndReport | undefined>((resolve, reject) => {
    resolveEnded = resolve
    rejectEnded = reject
  })
  ended.catch(() => {})
  let endPromise: Promise<TurnEndReport | undefined> | undefined
  let endReport: TurnEndReport | undefined
  let timer: NodeJS.Timeout | undefined
  let used = false

  function end(reason?: unknown, options?: { abortCall?: boolean }): Promise<TurnEndReport | undefined> {
    if (options?.abortCall !== false) abortCall(reason)
    if (endPromise) return endPromise
    clearTimeout(timer)
    endPromise = sandbox.end()
    endPromise.then((report) => {
      endReport = report
      resolveEnded(report)
    }, rejectEnded)
    return endPromise
  }

  function abortCall(reason: unknown): void {
    if (!callController.signal.aborted) {
      callController.abort(
        reason ??
          new SandkeepError({
            code: 'TURN_ENDED',
            message: 'The sandkeep turn ended.',
            tenant: sandbox.tenant,
          }),
      )
    }
  }

  function claim(name: string): AbortSignal {
    if (used) {
      throw new SandkeepError({
        code: 'INVALID_ARGUMENT',
        message: `sandkeepTurn wraps one call; ${name} was called again. Make a new sandkeepTurn for the next turn.`,
        conversationId: sandbox.conversationId,
        tenant: sandbox.tenant,
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
    return callController.signal
  }

  function callSignal(signal: AbortSignal, callerSignal: AbortSignal | undefined | null): AbortSignal {
    if (!callerSignal) return signal
    // The caller's abort ends the turn even when no one pulls the stream any more.
    const onCallerAbort = () => void end(callerSignal.reason).catch(() => {})
    if (callerSignal.aborted) onCallerAbort()
    else {
      callerSignal.addEventListener('abort', onCallerAbort, { once: true })
      // A long-lived caller signal (one per server, say) must not keep a listener per turn.
      ended.finally(() => callerSignal.removeEventListener('abort', onCallerAbort)).catch(() => {})
    }
    return AbortSignal.any([signal, callerSignal])
  }

  return {
    signal: callController.signal,
    ended,
    get endReport() {
      return endReport
    },
    end,
    claim,
    callSignal,
  }
}
