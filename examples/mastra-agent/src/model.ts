// A scripted model standing in for a real one (no API key): each call plays the next step of the turn's
// script. Replace it with any AI SDK model, e.g. `openai('gpt-5')`, and drop the scripts.
import type { MastraModelConfig } from '@mastra/core/llm'
import { MockLanguageModelV4 } from 'ai/test'

/** One model step: run a shell command in the workspace sandbox, or answer. */
export type Step = { command: string; background?: boolean } | { text: string }

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}
let calls = 0

export function scriptedModel(steps: Step[]): MastraModelConfig {
  let index = 0
  const model = new MockLanguageModelV4({
    doGenerate: async () => {
      const step = steps[index++] ?? { text: 'Done.' }
      if ('text' in step) {
        return {
          content: [{ type: 'text', text: step.text }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        }
      }
      const input = { command: step.command, ...(step.background ? { background: true } : {}) }
      return {
        content: [
          {
            type: 'tool-call',
            toolCallId: `call-${++calls}`,
            toolName: 'mastra_workspace_execute_command',
            input: JSON.stringify(input),
          },
        ],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      }
    },
  })
  // @mastra/core 1.71.0 types AI SDK 7 models with @ai-sdk/provider 4.0.17, `ai` 7.0.173 with 4.0.38: the
  // same LanguageModelV4 at run time, two declarations to TypeScript.
  return model as unknown as MastraModelConfig
}
