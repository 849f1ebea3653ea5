// `sandkeep demo`'s replay, wiring only: setup (setup.ts), the turn loop here, one turn (turn.ts), idle and
// faults between turns (between-turns.ts), the accounts (summary.ts).
import type { ModelMessage } from 'ai'
import { createScriptedModel } from '../scripted-model.js'
import { injectScheduledFault, waitScriptedIdle } from './between-turns.js'
import type { TurnSummary } from './events.js'
import { ManagerCache } from './managers.js'
import type { DemoResult, RunDemoOptions } from './options.js'
import { type Cleanup, type DemoEnvironment, openDemoEnvironment } from './setup.js'
import { finishDemo, turnEndEvent, turnSummary } from './summary.js'
import { playTurn } from './turn.js'

/**
 * Replays a transcript through the real AI SDK loop: for each turn, `streamText` with the scripted model and
 * the sandkeep tools, wrapped by `sandkeepTurn` so the sandbox resumes on the first tool call and is paused
 * when the stream ends. Emits events for the renderer; never throws for a failing turn (it is reported).
 */
export async function runDemo(options: RunDemoOptions): Promise<DemoResult> {
  const cleanup: Cleanup = []
  try {
    const environment = await openDemoEnvironment(options, cleanup)
    const managers = new ManagerCache(
      environment.store,
      environment.provider,
      options.transcript.healthChecks,
    )
    const replayed = await replayTurns(options, environment, managers)
    return await finishDemo(options, managers, replayed)
  } finally {
    options.renderer.progress(null)
    for (const step of cleanup.reverse()) await step().catch(() => {})
  }
}

/** The turn loop: idle, fault, the turn, its accounts; stops at the first failed turn unless `--keep-going`. */
async function replayTurns(
  options: RunDemoOptions,
  environment: DemoEnvironment,
  managers: ManagerCache,
): Promise<{ summaries: TurnSummary[]; failedTurn: number | null }> {
  const { transcript, renderer } = options
  const summaries: TurnSummary[] = []
  const messages: ModelMessage[] = []
  const model = createScriptedModel(transcript, { chunkDelayMs: 0 })
  let lastSandboxId: string | undefined
  let lastTurnEndedAt: number | undefined
  let failedTurn: number | null = null

  for (const turn of transcript.turns) {
    if (options.signal.aborted) break
    if (!(await waitScriptedIdle(turn, options))) break
    await injectScheduledFault(turn, options, environment.host, lastSandboxId)

    const turnStartedAt = Date.now()
    const pausedSeconds = lastTurnEndedAt === undefined ? 0 : (turnStartedAt - lastTurnEndedAt) / 1000
    const sessions = managers.forTurn(turn.index)
    const outcome = await playTurn(turn, { sessions, model, messages, options })
    if (outcome.report?.sandboxId) lastSandboxId = outcome.report.sandboxId
    lastTurnEndedAt = Date.now()
    const timing = { runningSeconds: (lastTurnEndedAt - turnStartedAt) / 1000, pausedSeconds }
    renderer.emit(turnEndEvent(turn, outcome, timing))
    summaries.push(turnSummary(turn, outcome, timing))
    if (!outcome.ok) {
      failedTurn ??= turn.index
      if (!options.keepGoing) break
    }
  }
  return { summaries, failedTurn }
}
