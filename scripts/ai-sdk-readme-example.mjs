// Runs @sandkeep/ai-sdk's README example for real: a local-e2b host, Redis on 127.0.0.1:6379, the built
// packages. It needs the E2B provider, the host and the Redis store, which @sandkeep/ai-sdk does not depend
// on, so it lives at the repository root, whose workspace has them all. There is no network here, so `model`
// is MockLanguageModelV4 playing the tool calls a model would make; everything the sandbox prints is real.
// Run: pnpm build && node scripts/ai-sdk-readme-example.mjs
import { randomUUID } from 'node:crypto'
import { sandkeepTurn } from '@sandkeep/ai-sdk'
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { simulateReadableStream, stepCountIs } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}
const steps = [
  [
    {
      type: 'tool-call',
      toolCallId: 'c1',
      toolName: 'writeFile',
      input: JSON.stringify({ path: 'data.csv', content: 'x\n3\n1\n4\n1\n5\n' }),
    },
  ],
  [
    {
      type: 'tool-call',
      toolCallId: 'c2',
      toolName: 'runCode',
      input: JSON.stringify({
        code: "import csv, statistics\nxs = [int(row['x']) for row in csv.DictReader(open('data.csv'))]\nstatistics.mean(xs)",
      }),
    },
  ],
  [
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: 'The mean of x is 2.8.' },
    { type: 'text-end', id: 't' },
  ],
]
let step = 0
const model = new MockLanguageModelV4({
  doStream: async () => {
    const parts = steps[step++] ?? []
    const finish = parts[0]?.type === 'tool-call' ? 'tool-calls' : 'stop'
    return {
      stream: simulateReadableStream({
        chunks: [
          { type: 'stream-start', warnings: [] },
          ...parts,
          { type: 'finish', finishReason: { unified: finish, raw: finish }, usage },
        ],
      }),
    }
  },
})

const host = await startLocalE2B({ logger: () => {} })
const store = createRedisSessionStore({ prefix: `readme-${randomUUID().slice(0, 8)}` })
const sessions = createSessionManager({
  store,
  provider: createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }),
})
const conversationId = 'conv-42'

// --- the README example, from here ---
const turn = sandkeepTurn({ sessions, conversationId })
const result = turn.streamText({
  model,
  prompt: 'What is the mean of x in data.csv?',
  stopWhen: stepCountIs(5),
})
for await (const part of result.fullStream) {
  if (part.type === 'tool-call') console.log('tool-call  ', part.toolName, JSON.stringify(part.input))
  if (part.type === 'tool-result') console.log('tool-result', JSON.stringify(part.output))
  if (part.type === 'text-delta') console.log('text       ', part.text)
}
console.log('turn ended:', (await turn.ended).action)
// --- to here ---
console.log(`(host: sandbox ${turn.report.sandboxId} is ${host.getSandbox(turn.report.sandboxId).state})`)

await sessions.endSession(conversationId)
await store.close()
await host.close()
