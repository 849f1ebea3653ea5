// One turn of the replay: the user's message through `streamText` wrapped by `sandkeepTurn`, its stream parts
// turned into events, the tool results checked against the transcript, and the session manager's reports.
import { sandkeepTurn } from '@sandkeep/ai-sdk'
import type { ResumeReport, SessionManager, SessionManagerEvents, TurnEndReport } from '@sandkeep/core'
import { type LanguageModel, type ModelMessage, stepCountIs } from 'ai'
import { describeError } from '../errors.js'
import type { TranscriptToolCall, TranscriptTurn } from '../transcript.js'
import type { DemoRenderer } from './events.js'
import type { RunDemoOptions } from './options.js'

/** The steps the model may take in one turn: its tool calls plus the final answer, with some slack. */
const stepSlack = 2

/** Why a turn failed, as events carry it. */
export type TurnError = { code?: string; message: string }

/** What one turn did. */
export interface TurnOutcome {
  /** True when every tool result met the transcript's expectation and nothing threw. */
  ok: boolean
  /** Why it failed, when known. */
  error: TurnError | undefined
  /** The resume report. */
  report: ResumeReport | undefined
  /** What the end of the turn did. */
  end: TurnEndReport | undefined
  /** Journal steps replayed after the resume. */
  rehydrate: { steps: number; ms: number; reason: string } | null
}

/** Runs one turn; `messages` is the conversation so far and gets this turn's messages appended. */
export async function playTurn(
  turn: TranscriptTurn,
  context: {
    sessions: SessionManager
    model: LanguageModel
    /** The conversation the turn is on (the replay's, or a fork's). */
    conversationId: string
    messages: ModelMessage[]
    options: RunDemoOptions
  },
): Promise<TurnOutcome> {
  const { sessions, model, messages, options, conversationId } = context
  const { renderer, signal } = options
  const observed = observeTurn(sessions, conversationId)
  renderer.emit({
    type: 'turn-start',
    turn: turn.index,
    user: turn.user,
    conversationId,
    conversation: turn.conversation,
    chatTurn: turn.chatTurn,
  })
  renderer.progress('waiting for the model')

  let ok = true
  let error: TurnError | undefined
  let report: ResumeReport | undefined
  let end: TurnEndReport | undefined
  messages.push({ role: 'user', content: turn.user })
  const handle = sandkeepTurn({
    sessions,
    conversationId,
    tenant: options.tenant,
    abortSignal: signal,
  })
  try {
    const result = handle.streamText({
      model,
      messages,
      stopWhen: stepCountIs(turn.toolCalls.length + stepSlack),
    })
    const streamed = await followStream(result.fullStream, turn, renderer, signal)
    ok = streamed.ok
    renderer.progress('pausing the sandbox')
    end = await handle.ended
    report = handle.report
    messages.push(...(await result.response).messages)
    renderer.emit({ type: 'text', turn: turn.index, text: streamed.text })
  } catch (caught) {
    ok = false
    error = errorInfo(caught)
    renderer.progress('ending the turn')
    end = await handle.end().catch(() => undefined)
    report = handle.report
  } finally {
    observed.stop()
  }
  renderer.progress(null)
  if (observed.error && !error && !ok) error = observed.error
  if (signal.aborted && !ok) error = { message: 'interrupted' }
  return {
    ok,
    error,
    report: report ?? observed.report,
    end: end ?? observed.end,
    rehydrate: observed.rehydrate,
  }
}

type StreamPart =
  ReturnType<ReturnType<typeof sandkeepTurn>['streamText']>['fullStream'] extends AsyncIterable<infer Part>
    ? Part
    : never

/** Emits the stream's tool calls and results; returns the final text and whether every result passed. */
async function followStream(
  stream: AsyncIterable<StreamPart>,
  turn: TranscriptTurn,
  renderer: DemoRenderer,
  signal: AbortSignal,
): Promise<{ ok: boolean; text: string }> {
  const calls = new Map<string, TranscriptToolCall | undefined>()
  let callIndex = 0
  let text = ''
  let ok = true
  for await (const part of stream) {
    switch (part.type) {
      case 'tool-call':
        calls.set(part.toolCallId, turn.toolCalls[callIndex++])
        renderer.emit({
          type: 'tool-call',
          turn: turn.index,
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          input: part.input,
        })
        renderer.progress(`running ${part.toolName} in the sandbox`)
        break
      case 'tool-result': {
        const problem = checkToolOutput(part.output, calls.get(part.toolCallId))
        if (problem) ok = false
        renderer.emit({
          type: 'tool-result',
          turn: turn.index,
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          output: part.output,
          ok: problem === undefined,
          ...(problem ? { problem } : {}),
        })
        renderer.progress('waiting for the model')
        break
      }
      case 'tool-error':
        ok = false
        renderer.emit({
          type: 'tool-result',
          turn: turn.index,
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          output: { error: describeError(part.error) },
          ok: false,
          problem: 'the tool threw instead of returning a result',
        })
        break
      case 'text-delta':
        text += part.text
        renderer.textDelta?.(turn.index, part.text)
        break
      case 'error':
        throw part.error
      case 'abort':
        throw signal.reason ?? new Error('the turn was aborted')
    }
  }
  return { ok, text }
}

/** Checks a tool result against the transcript's expectation; returns the problem or `undefined`. */
export function checkToolOutput(output: unknown, call: TranscriptToolCall | undefined): string | undefined {
  if (typeof output === 'object' && output !== null) {
    const record = output as Record<string, unknown>
    if (typeof record.error === 'string' && record.error) return `the tool reported an error`
    if (typeof record.exitCode === 'number' && record.exitCode !== 0)
      return `the command exited with ${record.exitCode}`
  }
  const wanted = call?.expect?.contains
  if (wanted === undefined) return undefined
  const haystack = typeof output === 'string' ? output : JSON.stringify(output)
  for (const needle of [wanted].flat()) {
    // Compare against the JSON text and the decoded values alike, so `"west": 4790` matches an escaped
    // stdout as well as a plain string result.
    if (!haystack.includes(needle) && !haystack.includes(JSON.stringify(needle).slice(1, -1))) {
      return `expected the output to contain ${JSON.stringify(needle)}`
    }
  }
  return undefined
}

/** A thrown error as events carry it: its code (when it has one) and message. */
export function errorInfo(error: unknown): TurnError {
  const code = (error as { code?: unknown })?.code
  const message = error instanceof Error ? error.message : String(error)
  return typeof code === 'string' && /^[A-Z_]+$/.test(code) ? { code, message } : { message }
}

/** Listens to one turn's session-manager events (repairs, rehydration, reports) for the conversation. */
function observeTurn(sessions: SessionManager, conversationId: string) {
  const state: {
    report: ResumeReport | undefined
    end: TurnEndReport | undefined
    rehydrate: { steps: number; ms: number; reason: string } | null
    error: TurnError | undefined
    stop: () => void
  } = { report: undefined, end: undefined, rehydrate: null, error: undefined, stop: () => {} }
  const mine = (payload: { conversationId?: string }) => payload.conversationId === conversationId
  const offs = [
    sessions.on('resume-end', (payload: SessionManagerEvents['resume-end']) => {
      if (mine(payload)) state.report = payload.report
    }),
    sessions.on('turn-end', (payload: SessionManagerEvents['turn-end']) => {
      if (mine(payload)) state.end = payload.end
    }),
    sessions.on('rehydrate', (payload: SessionManagerEvents['rehydrate']) => {
      if (!mine(payload)) return
      const previous = state.rehydrate
      state.rehydrate = {
        steps: (previous?.steps ?? 0) + payload.steps,
        ms: (previous?.ms ?? 0) + payload.ms,
        reason: payload.reason,
      }
    }),
    sessions.on('error', (payload: SessionManagerEvents['error']) => {
      if (payload.conversationId === conversationId) state.error = errorInfo(payload.error)
    }),
  ]
  state.stop = () => {
    for (const off of offs) off()
  }
  return state
}
