import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { MockLanguageModelV4 } from 'ai/test'
import type { Transcript } from './transcript.js'

/** Where the scripted model is in the transcript for a given prompt. */
export interface ScriptPosition {
  /** 1-based turn: the number of user messages in the prompt. */
  turn: number
  /** 0-based step within the turn: the number of tool results after the last user message. */
  step: number
}

/**
 * Finds the turn and step a prompt is at, the way a real model would see it: every user message starts a
 * turn, every tool result after it means one more step of that turn is done.
 */
export function scriptPosition(prompt: LanguageModelV4CallOptions['prompt']): ScriptPosition {
  let turn = 0
  let step = 0
  for (const message of prompt) {
    if (message.role === 'user') {
      turn++
      step = 0
    } else if (message.role === 'tool') {
      step += message.content.filter((part) => part.type === 'tool-result').length
    }
  }
  return { turn, step }
}

const usage = {
  inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: undefined, text: undefined, reasoning: undefined },
}

/** Options of {@link createScriptedModel}. */
export interface ScriptedModelOptions {
  /** Delay between streamed text chunks, ms (0 = none). Makes streaming visible in a terminal. */
  chunkDelayMs?: number
  /**
   * The transcript turn (1-based `index`) the model is playing, for a replay whose conversations branch: a
   * regenerated answer or a fork is not the prompt's n-th user message. Default: the prompt's count.
   */
  currentTurn?: () => number
}

/**
 * A language model that plays a transcript: `MockLanguageModelV4` from `ai/test`, answering each call with
 * the next scripted tool call of the current turn, then the turn's final text. It reads its position from
 * the prompt (user messages and tool results), so one model serves the whole conversation, and it works
 * with `generateText`, `streamText` and agents alike. Tool inputs are sent as written in the transcript.
 */
export function createScriptedModel(
  transcript: Transcript,
  options: ScriptedModelOptions = {},
): LanguageModelV4 {
  const plan = (callOptions: LanguageModelV4CallOptions) => {
    const counted = scriptPosition(callOptions.prompt)
    const position = options.currentTurn ? { ...counted, turn: options.currentTurn() } : counted
    const turn = transcript.turns[position.turn - 1]
    if (!turn) {
      return {
        kind: 'text' as const,
        text: `(the transcript ${transcript.file} has no turn ${position.turn})`,
        position,
      }
    }
    const call = turn.toolCalls[position.step]
    if (call) {
      return {
        kind: 'tool-call' as const,
        toolCallId: `turn${position.turn}-call${position.step + 1}`,
        toolName: call.tool,
        input: JSON.stringify(call.input),
        position,
      }
    }
    return { kind: 'text' as const, text: turn.text, position }
  }
  const responseMetadata = (position: ScriptPosition) => ({
    id: `scripted-${position.turn}-${position.step}`,
    modelId: 'scripted',
    timestamp: new Date(),
  })

  return new MockLanguageModelV4({
    provider: 'sandkeep-transcript',
    modelId: 'scripted',
    doGenerate: async (callOptions) => {
      const next = plan(callOptions)
      return {
        content:
          next.kind === 'tool-call'
            ? [{ type: 'tool-call', toolCallId: next.toolCallId, toolName: next.toolName, input: next.input }]
            : [{ type: 'text', text: next.text }],
        finishReason:
          next.kind === 'tool-call'
            ? { unified: 'tool-calls', raw: 'tool_calls' }
            : { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
        response: responseMetadata(next.position),
      }
    },
    doStream: async (callOptions) => {
      const next = plan(callOptions)
      const parts: LanguageModelV4StreamPart[] = [
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', ...responseMetadata(next.position) },
      ]
      if (next.kind === 'tool-call') {
        parts.push(
          { type: 'tool-call', toolCallId: next.toolCallId, toolName: next.toolName, input: next.input },
          { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
        )
      } else {
        const id = `text-${next.position.turn}`
        parts.push({ type: 'text-start', id })
        for (const chunk of next.text.match(/\S+\s*|\s+/g) ?? [next.text])
          parts.push({ type: 'text-delta', id, delta: chunk })
        parts.push(
          { type: 'text-end', id },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
        )
      }
      return { stream: toStream(parts, options.chunkDelayMs ?? 0, callOptions.abortSignal) }
    },
  })
}

function toStream<T>(parts: T[], delayMs: number, signal: AbortSignal | undefined): ReadableStream<T> {
  let index = 0
  return new ReadableStream<T>({
    async pull(controller) {
      if (signal?.aborted) {
        controller.error(signal.reason)
        return
      }
      const part = parts[index++]
      if (part === undefined) {
        controller.close()
        return
      }
      if (delayMs > 0 && index > 2) await new Promise((resolve) => setTimeout(resolve, delayMs))
      controller.enqueue(part)
    },
  })
}
