// Scripts MockLanguageModelV4 from `ai/test`: each model call plays the next step (tool calls or text),
// and every prompt the model received is kept so tests can assert on what the model saw.
import { simulateReadableStream } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'

type LanguageModelV4CallOptions = Parameters<MockLanguageModelV4['doStream']>[0]
type LanguageModelV4StreamPart =
  Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never

/** One model step: call tools (in parallel when several), or answer with text. */
export type ScriptStep =
  | { toolCalls: Array<{ toolName: string; input: Record<string, unknown> }> }
  | { text: string }

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

let callCounter = 0

/** A mock model that plays `steps` in order, one per model call; past the end it answers "done". */
export function scriptedModel(
  steps: ScriptStep[],
  options: { chunkDelayMs?: number } = {},
): { model: MockLanguageModelV4; prompts: Array<LanguageModelV4CallOptions['prompt']> } {
  let index = 0
  const prompts: LanguageModelV4CallOptions['prompt'][] = []
  const next = (call: LanguageModelV4CallOptions) => {
    prompts.push(call.prompt)
    const step = steps[index] ?? { text: 'done' }
    index += 1
    return step
  }
  const model = new MockLanguageModelV4({
    doGenerate: async (call) => {
      const step = next(call)
      if ('text' in step) {
        return {
          content: [{ type: 'text', text: step.text }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        }
      }
      return {
        content: step.toolCalls.map((toolCall) => ({
          type: 'tool-call' as const,
          toolCallId: `call-${++callCounter}`,
          toolName: toolCall.toolName,
          input: JSON.stringify(toolCall.input),
        })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      }
    },
    doStream: async (call) => {
      const step = next(call)
      const chunks: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }]
      if ('text' in step) {
        chunks.push({ type: 'text-start', id: 't1' })
        for (const word of step.text.split(/(?<= )/))
          chunks.push({ type: 'text-delta', id: 't1', delta: word })
        chunks.push({ type: 'text-end', id: 't1' })
        chunks.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage })
      } else {
        for (const toolCall of step.toolCalls) {
          chunks.push({
            type: 'tool-call',
            toolCallId: `call-${++callCounter}`,
            toolName: toolCall.toolName,
            input: JSON.stringify(toolCall.input),
          })
        }
        chunks.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage })
      }
      return {
        stream: simulateReadableStream({
          chunks,
          chunkDelayInMs: options.chunkDelayMs ?? null,
          initialDelayInMs: null,
        }),
      }
    },
  })
  return { model, prompts }
}

/** The tool results (JSON outputs) found in one prompt the model received, in order. */
export function toolResultsIn(prompt: LanguageModelV4CallOptions['prompt'] | undefined): Array<{
  toolName: string
  output: unknown
}> {
  const results: Array<{ toolName: string; output: unknown }> = []
  for (const message of prompt ?? []) {
    if (message.role !== 'tool') continue
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue
      const output = part.output
      results.push({ toolName: part.toolName, output: 'value' in output ? output.value : output })
    }
  }
  return results
}
