// The example's scripted model: a MockLanguageModelV4 (from `ai/test`) that answers each user message with
// the steps scripted for its text, so the run needs no LLM key and the same message gets the same answer
// however often it is sent (a regenerated answer is the same script run on a rewound sandbox). Swap it for
// any AI SDK model to chat for real.
import { simulateReadableStream } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'

type CallOptions = Parameters<MockLanguageModelV4['doStream']>[0]
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never

/** A tool call of the script. */
export interface ScriptedCall {
  toolName: string
  input: Record<string, unknown>
}

/** The answer to one user message: model steps that call tools (in parallel within a step), then text. */
export interface ScriptedAnswer {
  steps: ScriptedCall[][]
  text: string
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

/** The text of the prompt's last user message, and how many model steps have answered it so far. */
function position(prompt: CallOptions['prompt']): { text: string; step: number } {
  let last = -1
  prompt.forEach((message, index) => {
    if (message.role === 'user') last = index
  })
  const user = prompt[last]
  const text =
    user?.role === 'user'
      ? user.content
          .map((part) => (part.type === 'text' ? part.text : ''))
          .join('')
          .trim()
      : ''
  const step = prompt.slice(last + 1).filter((message) => message.role === 'assistant').length
  return { text, step }
}

/**
 * A model that plays `script[userText]`; an unscripted message gets a text saying so. A list of answers is
 * played in turn, one per request for that text (the first request gets the first, a regenerate the next,
 * and so on round the list), so a regenerated answer can differ from the one it replaces.
 */
export function createScriptedChatModel(
  script: Record<string, ScriptedAnswer | ScriptedAnswer[]>,
): MockLanguageModelV4 {
  let calls = 0
  /** Requests so far per user text, and the answer each conversation's current request plays. */
  const requests = new Map<string, number>()
  const playing = new Map<string, ScriptedAnswer>()
  const answerFor = (text: string, step: number): ScriptedAnswer => {
    const entry = script[text]
    if (entry === undefined) return { steps: [], text: `(nothing scripted for "${text}")` }
    if (!Array.isArray(entry)) return entry
    if (step === 0 || !playing.has(text)) {
      const count = requests.get(text) ?? 0
      requests.set(text, count + 1)
      playing.set(text, entry[count % entry.length]!)
    }
    return playing.get(text)!
  }
  return new MockLanguageModelV4({
    doStream: async (options) => {
      const { text, step } = position(options.prompt)
      const answer = answerFor(text, step)
      const toolCalls = answer.steps[step]
      const parts: StreamPart[] = [{ type: 'stream-start', warnings: [] }]
      if (toolCalls) {
        for (const call of toolCalls) {
          calls += 1
          parts.push({
            type: 'tool-call',
            toolCallId: `call-${calls}`,
            toolName: call.toolName,
            input: JSON.stringify(call.input),
          })
        }
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage })
      } else {
        parts.push({ type: 'text-start', id: 'text' })
        parts.push({ type: 'text-delta', id: 'text', delta: answer.text })
        parts.push({ type: 'text-end', id: 'text' })
        parts.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage })
      }
      return {
        stream: simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }),
      }
    },
  })
}
