// `sandkeep demo`'s replay, wiring only: setup (setup.ts), the turn loop here, one turn (turn.ts), idle and
// faults between turns (between-turns.ts), rewinds and forks (branches.ts), the accounts (summary.ts).

import { createScriptedModel } from '../scripted-model.js'
import type { TranscriptTurn } from '../transcript.js'
import { injectScheduledFault, waitScriptedIdle } from './between-turns.js'
import { Conversations, restoreProblem } from './branches.js'
import type { TurnSummary } from './events.js'
import { ManagerCache } from './managers.js'
import type { DemoResult, RunDemoOptions } from './options.js'
import { type Cleanup, type DemoEnvironment, openDemoEnvironment } from './setup.js'
import { finishDemo, turnEndEvent, turnSummary } from './summary.js'
import { errorInfo, playTurn, type TurnOutcome } from './turn.js'

/**
 * Replays a transcript through the real AI SDK loop: for each turn, `streamText` with the scripted model and
 * the sandkeep tools, wrapped by `sandkeepTurn` so the sandbox resumes on the first tool call and is paused
 * when the stream ends. Emits events for the renderer; never throws for a failing turn (it is reported).
 */
export async function runDemo(options: RunDemoOptions): Promise<DemoResult> {
  const cleanup: Cleanup = []
  try {
    const environment = await openDemoEnvironment(options, cleanup)
    const managers = new ManagerCache(environment.store, environment.provider, options.transcript)
    const conversations = new Conversations(options.conversationId)
    const replayed = await replayTurns(options, environment, managers, conversations)
    return await finishDemo(options, managers, { ...replayed, conversationIds: conversations.ids() })
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
  conversations: Conversations,
): Promise<{ summaries: TurnSummary[]; failedTurn: number | null }> {
  const { transcript, renderer } = options
  const summaries: TurnSummary[] = []
  let playing = 0
  const model = createScriptedModel(transcript, { chunkDelayMs: 0, currentTurn: () => playing })
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
    playing = turn.index
    const outcome = await branchAndPlay(turn, { sessions, model, conversations, options })
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

/** The turn's rewind or fork (a `branch` event), then the turn on its conversation, checked to start from it. */
async function branchAndPlay(
  turn: TranscriptTurn,
  context: Omit<Parameters<typeof playTurn>[1], 'conversationId' | 'messages'> & {
    conversations: Conversations
  },
): Promise<TurnOutcome> {
  const { conversations, options } = context
  try {
    const event = await conversations.branch(turn, context.sessions, options)
    if (event) options.renderer.emit(event)
  } catch (caught) {
    options.renderer.emit({ type: 'turn-start', turn: turn.index, user: turn.user })
    return { ok: false, error: errorInfo(caught), report: undefined, end: undefined, rehydrate: null }
  }
  const conversation = conversations.of(turn)
  const outcome = await playTurn(turn, {
    ...context,
    conversationId: conversation.id,
    messages: conversation.messages,
  })
  conversations.ended(turn, outcome.end?.checkpoint?.id)
  const problem = restoreProblem(turn, outcome)
  return problem ? { ...outcome, ok: false, error: { message: problem } } : outcome
}
