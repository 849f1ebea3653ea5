// The one lifecycle of an adapter's turn, over the manager's: one lazy sandkeep turn, begun on the first
// sandbox call and shared by every call, ended once by end() after the calls still in flight were aborted and
// given `endGraceMs` to settle. Whatever wraps the session (a turn around one framework call) ends it here.
import {
  type JournalStep,
  mergeAbortSignals,
  type SandboxHandle,
  type Turn,
  type TurnEndReport,
  turnEndedError,
} from '@sandkeep/core'
import { stateLostNotice } from '../output.js'
import type { SessionSettings } from './options.js'
import type { SessionContext } from './types.js'

/** The turn behind a session and the calls that use it. */
export interface SessionLifecycle {
  /** Fires when the session ends or the caller's `abortSignal` fires. */
  readonly signal: AbortSignal
  readonly ended: boolean
  /** Settles once `end()` is done, with what it did (rejects when the end failed). */
  readonly whenEnded: Promise<TurnEndReport | undefined>
  /** What `end()` did, once it is done. */
  readonly endReport: TurnEndReport | undefined
  /** The turn once begun. */
  readonly turn: Turn | undefined
  operation: SessionContext['operation']
  recordSetupStep(step: JournalStep): Promise<void>
  /** The state-lost notice on the first call after a resume that lost state, then `undefined`. */
  takeStateNotice(): string | undefined
  /** Begins the turn now with its resume in the background (`'auto'`: if the previous turn used the sandbox). */
  prewarm(mode: true | 'auto'): void
  end(): Promise<TurnEndReport | undefined>
}

export function createSessionLifecycle(settings: SessionSettings): SessionLifecycle {
  const { conversationId, tenant, abortSignal: callerSignal } = settings
  // Aborted by end(), so that in-flight calls stop; the caller's signal joins it.
  const lifetime = new AbortController()
  const signal = mergeAbortSignals(lifetime.signal, callerSignal)

  const lazy = lazyTurn(settings)
  let ended = false
  let endPromise: Promise<TurnEndReport | undefined> | undefined
  let endReport: TurnEndReport | undefined
  const whenEnded = Promise.withResolvers<TurnEndReport | undefined>()
  whenEnded.promise.catch(() => {})
  let noticeGiven = false
  const inFlight = new Set<Promise<unknown>>()

  const turnEnded = () =>
    turnEndedError({ conversationId, tenant }, 'make a new sandbox session for the next turn')

  async function readyHandle(signal: AbortSignal, early: boolean): Promise<SandboxHandle> {
    // Begun by a call that needs the sandbox: the resume follows at once, so it may start with the lease
    // (the manager then connects while the lease is taken).
    const begun = await raceAbort(lazy.begin(true), signal)
    // The turn's own handle waits for the resume in each call; a first code cell or command handed it now carries the
    // resume's probes instead of waiting for them (no round trip of the resume's own on the user's wait). The
    // wait is then bounded by the turn's signal (the session's caller signal aborts the resume), not the call's.
    if (early && !begun.started) return begun.sandbox
    return raceAbort(begun.ready(), signal)
  }

  function operation<T>(
    abortSignal: AbortSignal | undefined,
    fn: (handle: SandboxHandle, signal: AbortSignal) => Promise<T>,
    early = false,
  ): Promise<T> {
    if (ended) return Promise.reject(turnEnded())
    if (abortSignal?.aborted) return Promise.reject(abortSignal.reason)
    if (signal.aborted) return Promise.reject(signal.reason ?? turnEnded())
    const callSignal = mergeAbortSignals(signal, abortSignal)
    const run = (async () => fn(await readyHandle(callSignal, early), callSignal))()
    inFlight.add(run)
    const forget = () => inFlight.delete(run)
    run.then(forget, forget)
    return run
  }

  async function end(): Promise<TurnEndReport | undefined> {
    if (endPromise) return endPromise
    ended = true
    endPromise = (async () => {
      lifetime.abort(turnEnded())
      if (inFlight.size > 0) await settleWithin([...inFlight], settings.endGraceMs)
      const begun = await lazy.begun()
      if (!begun) return undefined
      const report = await begun.end()
      // A turn begun ahead (prewarm 'auto') whose sandbox was never resumed did nothing worth a report,
      // unless it recorded a checkpoint: that turn counts, and a chat keeps its number with the message.
      const idle = begun.report === undefined && report.action === 'none' && !report.error
      return idle && !report.checkpoint ? undefined : report
    })()
    endPromise.then((report) => {
      endReport = report
      whenEnded.resolve(report)
    }, whenEnded.reject)
    return endPromise
  }

  return {
    signal,
    get ended() {
      return ended
    },
    whenEnded: whenEnded.promise,
    get endReport() {
      return endReport
    },
    get turn() {
      return lazy.turn
    },
    operation,
    recordSetupStep: async (step) => {
      if (ended) throw turnEnded()
      const begun = await lazy.begin()
      await begun.journal.record(step)
    },
    prewarm: (mode) => {
      if (ended || signal.aborted) return
      // A failed begin is forgotten (the first call that needs the sandbox tries again, and says why).
      lazy
        .begin(mode)
        .then((turn) => (mode === true ? turn.ready() : undefined))
        .catch(() => {})
    },
    takeStateNotice: () => {
      const report = lazy.turn?.report
      if (noticeGiven || report === undefined) return undefined
      noticeGiven = true
      return stateLostNotice(report)
    },
    end,
  }
}

/** The session's turn, begun once on first use; a failed begin is forgotten so the next call tries again. */
function lazyTurn({ sessions, conversationId, tenant, abortSignal, beforeBegin }: SessionSettings) {
  let turnPromise: Promise<Turn> | undefined
  let turn: Turn | undefined
  return {
    get turn(): Turn | undefined {
      return turn
    },
    /** Begins the turn once; `prewarm` (on the first call only) starts its resume in the background. */
    begin(prewarm?: true | 'auto'): Promise<Turn> {
      if (turnPromise === undefined) {
        turnPromise = (beforeBegin ? beforeBegin() : Promise.resolve())
          .then(() =>
            sessions.beginTurn(conversationId, {
              tenant,
              lazy: true,
              ...(prewarm === undefined ? {} : { prewarm }),
              ...(abortSignal === undefined ? {} : { abortSignal }),
            }),
          )
          .then((begun) => {
            turn = begun
            return begun
          })
        // A failed begin took no lease: forget it so the next call tries again.
        turnPromise.catch(() => {
          turnPromise = undefined
        })
      }
      return turnPromise
    },
    /** The turn if it was begun successfully, without beginning it. */
    begun(): Promise<Turn | undefined> {
      return turnPromise?.catch(() => undefined) ?? Promise.resolve(undefined)
    },
  }
}

/** Waits for `promises` to settle, or `graceMs`, whichever comes first. */
async function settleWithin(promises: Promise<unknown>[], graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([
    Promise.allSettled(promises),
    new Promise((resolve) => {
      timer = setTimeout(resolve, graceMs)
    }),
  ])
  clearTimeout(timer)
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}
