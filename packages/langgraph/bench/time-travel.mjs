// Figures for the README (pnpm --filter @sandkeep/langgraph bench, after pnpm build): on a local-e2b host
// in this process and the memory store, with the scripted agent of the tests,
//  - a run that continues the thread (the sandbox resumed, no restore) vs. a run from a past checkpoint
//    (time travel: the session restored to that checkpoint's snapshot, the journal replayed for memory);
//  - sandboxes created when several processes (here: savers that share nothing but the store) start runs
//    of one new thread at once.
import { MemorySaver } from '@langchain/langgraph'
import { createMemorySessionStore, createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { SandkeepCheckpointSaver } from '@sandkeep/langgraph'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { buildAgent, script } from '../test/helpers/agent.mjs'

const RUNS = Number(process.env.BENCH_RUNS) || 8
const CONCURRENT = Number(process.env.BENCH_CONCURRENT) || 4
const host = await startLocalE2B({ logger: () => {} })
const provider = createE2BProvider({
  apiKey: host.apiKey,
  apiUrl: host.apiUrl,
  sandboxUrl: host.sandboxUrl,
  snapshots: { keepsMemory: false },
})
const sessions = createSessionManager({
  store: createMemorySessionStore(),
  provider,
  checkpoints: { every: 'turn', keep: 100 },
})
const created = new Map()
sessions.on('resume-end', ({ conversationId, report }) => {
  if (report.outcome === 'created') created.set(conversationId, (created.get(conversationId) ?? 0) + 1)
})

const step = (n) => script([[['run_code', { code: `x = ${n}` }]]])
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const timed = async (fn) => {
  const started = performance.now()
  await fn()
  return performance.now() - started
}

const saver = new SandkeepCheckpointSaver({ saver: new MemorySaver(), sessions })
const graph = buildAgent(saver)
const thread = `bench-${Date.now()}`
await graph.invoke({ messages: [step(0)] }, saver.runConfig(thread))
const first = (await graph.getState({ configurable: { thread_id: thread } })).config.configurable
  .checkpoint_id
const continuing = []
const travelling = []
for (let i = 1; i <= RUNS; i += 1) {
  continuing.push(await timed(() => graph.invoke({ messages: [step(i)] }, saver.runConfig(thread))))
  const past = saver.runConfig(thread, { configurable: { checkpoint_id: first } })
  travelling.push(await timed(() => graph.invoke({ messages: [step(i)] }, past)))
}
await saver.deleteThread(thread)

const shared = `bench-concurrent-${Date.now()}`
await Promise.all(
  Array.from({ length: CONCURRENT }, () => {
    const own = new SandkeepCheckpointSaver({ saver: new MemorySaver(), sessions })
    return buildAgent(own).invoke({ messages: [step(1)] }, own.runConfig(shared))
  }),
)
await sessions.endSession(shared)

console.log(
  JSON.stringify({
    runs: RUNS,
    continueRunMedianMs: Math.round(median(continuing)),
    timeTravelRunMedianMs: Math.round(median(travelling)),
    concurrentRuns: CONCURRENT,
    sandboxesCreatedForOneThread: created.get(shared) ?? 0,
  }),
)
await sessions.close()
await host.close()
