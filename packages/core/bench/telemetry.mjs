// What telemetry costs per turn, so that turning it on is an informed choice: the same turn on the mock
// provider and the memory store, so that sandkeep's own work is all there is to measure, with telemetry
// off, with @opentelemetry/api loaded but no SDK registered (the default in a process that has the API), and
// with a recording tracer. The variants run round-robin, one turn each per round, so machine noise falls on
// all alike. Uses the BUILT package.
import { context } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { summary, table } from '../../../bench/stats.mjs'
import { createMockProvider } from '../../testing/dist/mock-provider.js'
import { createMemorySessionStore, createSessionManager } from '../dist/index.js'

const rounds = Number(process.env.ROUNDS ?? 3000)
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
const exporter = new InMemorySpanExporter()
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer(
  'bench',
)
const variants = [
  ['telemetry: false', false],
  ['API loaded, no SDK', undefined],
  ['recording tracer', { tracer }],
].map(([name, telemetry]) => ({
  name,
  sessions: createSessionManager({
    store: createMemorySessionStore(),
    provider: createMockProvider(),
    telemetry,
  }),
  samples: [],
}))
const conversations = Array.from({ length: 20 }, (_, i) => `bench-${i}`)
const body = async () => {}
for (let round = -200; round < rounds; round++) {
  const conversationId = conversations[(round + 200) % conversations.length]
  for (const variant of variants) {
    const started = performance.now()
    await variant.sessions.withTurn(conversationId, body)
    if (round >= 0) variant.samples.push((performance.now() - started) * 1000)
  }
  if (round % 100 === 0) exporter.reset()
}
const us = (value) => `${value.toFixed(0)} µs`
console.log(`telemetry overhead, ${rounds} turns per variant (mock provider, memory store):\n`)
console.log(
  table(
    ['variant', 'p50', 'p95', 'mean'],
    variants.map(({ name, samples }) => {
      const s = summary(samples)
      return [name, us(s.p50), us(s.p95), us(s.mean)]
    }),
  ),
)
