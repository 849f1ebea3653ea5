// Two turns of one conversation on the embedded defaults (local-e2b in this process, memory store), with
// OpenTelemetry's in-memory exporter collecting sandkeep's spans; after each turn the span tree is printed.
// In a real service, register your exporter (OTLP, console) instead: sandkeep uses the global tracer.
import { randomUUID } from 'node:crypto'
import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { createMemorySessionStore, createSessionManager, fileCheck } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'

/** What each turn recorded: the spans, and the tree as printed. */
export interface TurnSpans {
  spans: ReadableSpan[]
  tree: string[]
}

const ms = (span: ReadableSpan) => span.duration[0] * 1e3 + span.duration[1] / 1e6
const startOf = (span: ReadableSpan) => span.startTime[0] * 1e9 + span.startTime[1]

// Said once, on the turn span; repeated on every child they would only widen the tree.
const TURN_ONLY = new Set([
  'sandkeep.tenant',
  'sandkeep.conversation.hash',
  'sandkeep.sandbox.id',
  'sandkeep.store.id',
])

/** Attributes worth a glance, on one line: sandkeep's own, minus repeats and false/zero defaults. */
function describe(span: ReadableSpan): string {
  const parts: string[] = []
  for (const [key, value] of Object.entries(span.attributes)) {
    if (!key.startsWith('sandkeep.') || value === false || value === 0) continue
    if (span.name !== 'sandkeep.turn' && TURN_ONLY.has(key)) continue
    const short = key === 'sandkeep.conversation.hash' ? `${String(value).slice(0, 8)}…` : String(value)
    parts.push(`${key.replace(/^sandkeep\./, '')}=${short}`)
  }
  if (span.status.code === 2) parts.push(`ERROR ${span.status.message ?? ''}`)
  return parts.join(' ')
}

/** The spans as an indented tree, children in start order. */
export function renderTree(spans: ReadableSpan[]): string[] {
  const ids = new Set(spans.map((span) => span.spanContext().spanId))
  const children = new Map<string | undefined, ReadableSpan[]>()
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId
    const key = parent && ids.has(parent) ? parent : undefined
    children.set(key, [...(children.get(key) ?? []), span])
  }
  const lines: string[] = []
  const walk = (parent: string | undefined, depth: number) => {
    for (const span of (children.get(parent) ?? []).sort((a, b) => startOf(a) - startOf(b))) {
      const label = `${'  '.repeat(depth)}${span.name}`
      lines.push(`${label.padEnd(34)} ${ms(span).toFixed(1).padStart(7)} ms  ${describe(span)}`.trimEnd())
      walk(span.spanContext().spanId, depth + 1)
    }
  }
  walk(undefined, 0)
  return lines
}

export async function main(print: (line: string) => void = console.log): Promise<TurnSpans[]> {
  // Spans nest through the active context: an AsyncLocalStorage context manager carries it across awaits.
  const contextManager = new AsyncLocalStorageContextManager().enable()
  context.setGlobalContextManager(contextManager)
  const exporter = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  // The app's own tracer; sandkeep gets it too here (left out, sandkeep uses the global tracer provider).
  const tracer = tracerProvider.getTracer('otel-spans-example')
  const host = await startLocalE2B({ port: 0, logger: () => {} })
  const sessions = createSessionManager({
    store: createMemorySessionStore(),
    provider: createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }),
    healthChecks: [fileCheck({ name: 'notes', path: '/home/user/notes.txt' })],
    telemetry: { tracer },
  })
  const conversationId = `conv-${randomUUID()}`
  const turns: Array<{ say: string; code: string }> = [
    { say: 'remember 41', code: "x = 41\nopen('/home/user/notes.txt', 'w').write('x started at 41')\nx" },
    { say: 'add one', code: 'x + 1' },
  ]
  const results: TurnSpans[] = []
  try {
    for (const [index, { say, code }] of turns.entries()) {
      exporter.reset()
      // The caller's span (an HTTP request, a queue job): sandkeep's turn nests under it.
      const request = tracer.startSpan(`chat turn ${index + 1}`)
      const output = await context.with(trace.setSpan(context.active(), request), () =>
        sessions.withTurn(conversationId, async (turn) => (await turn.sandbox.runCode(code)).text, {
          tenant: 'acme',
        }),
      )
      request.end()
      const spans = exporter.getFinishedSpans()
      const tree = renderTree(spans)
      print(`user: ${say}  → runCode: ${output}`)
      for (const line of tree) print(`  ${line}`)
      results.push({ spans, tree })
    }
  } finally {
    await sessions.endSession(conversationId, { tenant: 'acme' }).catch(() => {})
    await host.close()
    await tracerProvider.shutdown()
    context.disable()
  }
  return results
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main()
}
