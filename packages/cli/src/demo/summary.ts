// The accounts of a replay: each turn's `turn-end` event and summary row, then the end of the session and the
// `summary` event.
import { describeError } from '../errors.js'
import type { TranscriptTurn } from '../transcript.js'
import type { DemoEvent, TurnSummary } from './events.js'
import type { ManagerCache } from './managers.js'
import type { DemoResult, RunDemoOptions } from './options.js'
import type { TurnOutcome } from './turn.js'

/** Measured time of one turn, seconds. */
export interface TurnTiming {
  /** Turn start to pause done. */
  runningSeconds: number
  /** Since the previous turn ended (0 for the first). */
  pausedSeconds: number
}

/** The `turn-end` event of a turn. */
export function turnEndEvent(turn: TranscriptTurn, outcome: TurnOutcome, timing: TurnTiming): DemoEvent {
  const { ok, error } = outcome
  return {
    type: 'turn-end',
    turn: turn.index,
    ok,
    report: outcome.report ?? null,
    end: outcome.end ?? null,
    rehydrate: outcome.rehydrate,
    ...(error
      ? { error }
      : ok
        ? {}
        : { error: { message: "a tool result missed the transcript's expectation" } }),
    ...timing,
  }
}

/** The summary row of a turn. */
export function turnSummary(turn: TranscriptTurn, outcome: TurnOutcome, timing: TurnTiming): TurnSummary {
  const { report } = outcome
  return {
    turn: turn.index,
    conversation: turn.conversation,
    chatTurn: turn.chatTurn,
    restored: report?.restored ?? null,
    ok: outcome.ok,
    outcome: report?.outcome ?? null,
    action: outcome.end?.action ?? null,
    ...timing,
    scriptedIdleSeconds: turn.idleBeforeMs / 1000,
    repairs: (report?.checks ?? []).filter((check) => check.status === 'repaired').map((check) => check.name),
    rehydratedSteps: report?.rehydratedSteps ?? 0,
    stateLost: report?.stateLost ?? false,
  }
}

/** Ends the sessions, forks included (unless `--keep-session`), and emits the `summary` event. */
export async function finishDemo(
  options: RunDemoOptions,
  managers: ManagerCache,
  replayed: { summaries: TurnSummary[]; failedTurn: number | null; conversationIds: string[] },
): Promise<DemoResult> {
  const { renderer, signal, transcript } = options
  const { summaries } = replayed
  let { failedTurn } = replayed
  if (signal.aborted && failedTurn === null && summaries.length < transcript.turns.length) {
    failedTurn = summaries.length + 1
  }
  if (!options.keepSession) {
    renderer.progress('ending the session (killing its sandbox)')
    const sessions = managers.forTurn(Number.POSITIVE_INFINITY)
    for (const conversationId of replayed.conversationIds) {
      await sessions.endSession(conversationId, { tenant: options.tenant }).catch((caught: unknown) => {
        renderer.emit({
          type: 'error',
          message: `could not end the session ${conversationId}: ${describeError(caught)}`,
        })
      })
    }
  }
  renderer.progress(null)
  const ok = failedTurn === null
  renderer.emit({ type: 'summary', ok, turns: summaries, failedTurn, interrupted: signal.aborted })
  return { ok, turns: summaries }
}
