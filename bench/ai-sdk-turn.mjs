// Cost of a sandkeep turn seen through the AI SDK, against a local-e2b host and Redis (127.0.0.1:6379).
// Each turn is a real streamText loop whose (mock) model calls runCommand once, then answers:
//   resume+tool  = tool-call part -> tool-result part (lease, connect/resume, health, the command), with
//                  resume: 'lazy' so the resume starts at the tool call
//   end          = last text part -> stream closed (the turn's end, and its pause, follow the close)
//   reply        = streamText() -> stream closed
//   turn         = streamText() -> turn.ended (the pause done)
//   raw          = the same work without the AI SDK: sessions.withTurn + runCommand('true'), pause included
// It needs the whole stack (the E2B provider, a local-e2b host, the Redis store), which @sandkeep/ai-sdk does
// not depend on, so it lives with the other full-stack benches; `pnpm bench` runs it. Imports the BUILT
// packages (`pnpm build`). Usage: node bench/ai-sdk-turn.mjs [--turns 30] [--json]
import { randomUUID } from 'node:crypto'
import { sandkeepTurn } from '@sandkeep/ai-sdk'
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { simulateReadableStream, stepCountIs } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import { percentile } from './stats.mjs'

const args = process.argv.slice(2)
const turns = Number(args[args.indexOf('--turns') + 1]) || 30
const asJson = args.includes('--json')

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}
function oneCommandModel() {
  let step = 0
  return new MockLanguageModelV4({
    doStream: async () => {
      const first = step++ === 0
      const parts = first
        ? [
            {
              type: 'tool-call',
              toolCallId: `c${randomUUID()}`,
              toolName: 'runCommand',
              input: '{"command":"true"}',
            },
          ]
        : [
            { type: 'text-start', id: 't' },
            { type: 'text-delta', id: 't', delta: 'ok' },
            { type: 'text-end', id: 't' },
          ]
      const reason = first ? 'tool-calls' : 'stop'
      return {
        stream: simulateReadableStream({
          chunks: [
            { type: 'stream-start', warnings: [] },
            ...parts,
            { type: 'finish', finishReason: { unified: reason, raw: reason }, usage },
          ],
        }),
      }
    },
  })
}

const host = await startLocalE2B({ logger: () => {} })
const store = createRedisSessionStore({ prefix: `bench-ai-${randomUUID().slice(0, 8)}` })
const sessions = createSessionManager({
  store,
  provider: createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }),
})
const conversationId = `bench-${randomUUID()}`
const rawConversationId = `bench-raw-${randomUUID()}`
const samples = { resumeAndTool: [], end: [], reply: [], turn: [], raw: [] }

async function aiTurn(record) {
  const started = performance.now()
  const turn = sandkeepTurn({ sessions, conversationId, resume: 'lazy' })
  const result = turn.streamText({ model: oneCommandModel(), prompt: 'go', stopWhen: stepCountIs(3) })
  let toolCallAt = 0
  let lastTextAt = 0
  for await (const part of result.fullStream) {
    if (part.type === 'tool-call') toolCallAt = performance.now()
    if (part.type === 'tool-result') {
      if (part.output.exitCode !== 0) throw new Error(`tool failed: ${JSON.stringify(part.output)}`)
      if (record) samples.resumeAndTool.push(performance.now() - toolCallAt)
    }
    if (part.type === 'text-end') lastTextAt = performance.now()
  }
  const closed = performance.now()
  const end = await turn.ended
  const ended = performance.now()
  if (end?.action !== 'paused') throw new Error(`turn ended with ${JSON.stringify(end)}`)
  if (record) {
    samples.end.push(closed - lastTextAt)
    samples.reply.push(closed - started)
    samples.turn.push(ended - started)
  }
}

async function rawTurn(record) {
  const started = performance.now()
  await sessions.withTurn(rawConversationId, async (turn) => {
    const result = await turn.sandbox.runCommand('true')
    if (result.exitCode !== 0) throw new Error('raw command failed')
  })
  if (record) samples.raw.push(performance.now() - started)
}

try {
  await store.get({ tenant: 'default', conversationId: 'bench-probe' })
} catch (error) {
  if (error?.code === 'STORE_UNAVAILABLE') {
    console.log(
      '@sandkeep/ai-sdk bench skipped: Redis is not reachable (REDIS_URL, default redis://127.0.0.1:6379).',
    )
    await store.close()
    await host.close()
    process.exit(0)
  }
}
try {
  // The first turn creates the sandbox; a few more warm up connections and the JIT. Not measured.
  for (let index = 0; index < 3; index++) {
    await aiTurn(false)
    await rawTurn(false)
  }
  for (let index = 0; index < turns; index++) {
    await aiTurn(true)
    await rawTurn(true)
  }
} finally {
  await sessions.endSession(conversationId).catch(() => {})
  await sessions.endSession(rawConversationId).catch(() => {})
  await store.close()
  await host.close()
}

const rows = Object.entries(samples).map(([name, values]) => ({
  name,
  n: values.length,
  p50: Number(percentile(values, 50).toFixed(2)),
  p95: Number(percentile(values, 95).toFixed(2)),
}))
if (asJson) console.log(JSON.stringify({ benchmark: 'ai-sdk-turn', turns, rows }))
else {
  console.log(
    `@sandkeep/ai-sdk: ${turns} paused->resumed turns of one conversation on local-e2b + Redis (ms)`,
  )
  console.log('| measure | n | p50 | p95 |\n| --- | --- | --- | --- |')
  for (const row of rows) console.log(`| ${row.name} | ${row.n} | ${row.p50} | ${row.p95} |`)
}
