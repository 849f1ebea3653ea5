// A scripted AI SDK 7 model (MockLanguageModelV4 from `ai/test`) for a Mastra Agent: each model call plays
// the next step of the script (tool calls, or a text answer) and keeps the prompt it was given.
import { simulateReadableStream } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'

type CallOptions = Parameters<MockLanguageModelV4['doStream']>[0]
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never

/** One step: call tools, or answer. */
export type Step = { tools: Array<{ name: string; input: Record<string, unknown> }> } | { text: string }

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
}
let calls = 0

/** A model playing `steps` in order ("done" past the end), and the prompts it received. */
export function scriptedModel(steps: Step[]): {
  model: MockLanguageModelV4
  prompts: CallOptions['prompt'][]
} {
  const prompts: CallOptions['prompt'][] = []
  let index = 0
  const next = (call: CallOptions): Step => {
    prompts.push(call.prompt)
    return steps[index++] ?? { text: 'done' }
  }
  const parts = (step: Step): StreamPart[] => {
    if ('text' in step) {
      return [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 'a' },
        { type: 'text-delta', id: 'a', delta: step.text },
        { type: 'text-end', id: 'a' },
        { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
      ]
    }
    return [
      { type: 'stream-start', warnings: [] },
      ...step.tools.map(
        (tool): StreamPart => ({
          type: 'tool-call',
          toolCallId: `call-${++calls}`,
          toolName: tool.name,
          input: JSON.stringify(tool.input),
        }),
      ),
      { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
    ]
  }
  const content = (step: Step) =>
    'text' in step
      ? {
          content: [{ type: 'text' as const, text: step.text }],
          finishReason: { unified: 'stop' as const, raw: 'stop' },
        }
      : {
          content: step.tools.map((tool) => ({
            type: 'tool-call' as const,
            toolCallId: `call-${++calls}`,
            toolName: tool.name,
            input: JSON.stringify(tool.input),
          })),
          finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' },
        }
  const model = new MockLanguageModelV4({
    doGenerate: async (call) => ({ ...content(next(call)), usage, warnings: [] }),
    doStream: async (call) => ({
      stream: simulateReadableStream({
        chunks: parts(next(call)),
        chunkDelayInMs: null,
        initialDelayInMs: null,
      }),
    }),
  })
  return { model, prompts }
}

/** The text of every tool result the model saw in one prompt, in order. */
export function toolOutputsIn(prompt: CallOptions['prompt'] | undefined): string[] {
  const outputs: string[] = []
  for (const message of prompt ?? []) {
    if (message.role !== 'tool') continue
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue
      const output = part.output as { value?: unknown }
      outputs.push(typeof output.value === 'string' ? output.value : JSON.stringify(output.value ?? output))
    }
  }
  return outputs
}
