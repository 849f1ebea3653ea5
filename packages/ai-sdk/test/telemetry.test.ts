// Observability: one AI SDK generateText turn with experimental_telemetry, traced by @ai-sdk/otel and
// sandkeep into one in-memory exporter, against a real local-e2b host through the unmodified E2B SDK. The
// sandkeep spans must hang under the AI SDK's tool span (where the sandbox was first used), under the caller.
import { randomUUID } from 'node:crypto'
import { OpenTelemetry } from '@ai-sdk/otel'
import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import type { SessionManager } from '@sandkeep/core'
import type { LocalE2BHost } from '@sandkeep/local-e2b'
import { stepCountIs } from 'ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scriptedModel } from '../src/mock-model.test-support.js'
import { sandkeepTurn } from '../src/turn/index.js'
import { startLocalSessions, stopLocalSessions } from './helpers.js'

const exporter = new InMemorySpanExporter()
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer(
  'telemetry-test',
)
let host: LocalE2BHost
let sessions: SessionManager
const conversationId = `conv-${randomUUID()}`

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  ;({ host, sessions } = await startLocalSessions({ onTurnEnd: 'pause', telemetry: { tracer } }))
}, 120_000)

afterAll(async () => {
  await stopLocalSessions({ host, sessions }, [conversationId])
  context.disable()
}, 120_000)

/** The span tree as indented lines, for the failure message. */
function render(spans: ReadableSpan[]): string {
  const children = new Map<string | undefined, ReadableSpan[]>()
  const ids = new Set(spans.map((span) => span.spanContext().spanId))
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId
    const key = parent && ids.has(parent) ? parent : undefined
    children.set(key, [...(children.get(key) ?? []), span])
  }
  const lines: string[] = []
  const walk = (parent: string | undefined, depth: number) => {
    const list = (children.get(parent) ?? []).sort(
      (a, b) => (a.startTime[0] - b.startTime[0]) * 1e9 + a.startTime[1] - b.startTime[1],
    )
    for (const span of list) {
      lines.push(`${'  '.repeat(depth)}${span.name}`)
      walk(span.spanContext().spanId, depth + 1)
    }
  }
  walk(undefined, 0)
  return lines.join('\n')
}

describe('OpenTelemetry: one generateText turn', () => {
  it("nests sandkeep.turn under the AI SDK's tool span, and resume, health, store and pause under the turn", async () => {
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCode', input: { code: 'x = 6 * 7\nx' } }] },
      { text: 'x is 42.' },
    ])
    const request = tracer.startSpan('chat-request')
    // A lazy turn begins in the tool that first uses the sandbox (an eager one begins with the call).
    const turn = sandkeepTurn({ sessions, conversationId, resume: 'lazy' })
    const result = await context.with(trace.setSpan(context.active(), request), () =>
      turn.generateText({
        model,
        prompt: 'compute',
        stopWhen: stepCountIs(3),
        experimental_telemetry: { isEnabled: true, integrations: [new OpenTelemetry({ tracer })] },
      }),
    )
    request.end()
    expect(result.text).toBe('x is 42.')
    expect((await turn.ended)?.action).toBe('paused')

    const spans = exporter.getFinishedSpans()
    const tree = render(spans)
    const byId = new Map(spans.map((span) => [span.spanContext().spanId, span]))
    const parent = (span: ReadableSpan | undefined) => byId.get(span?.parentSpanContext?.spanId ?? '')
    const one = (name: string) => {
      const found = spans.filter((span) => span.name === name)
      expect(found, `${name} in\n${tree}`).toHaveLength(1)
      return found[0]
    }

    const sandkeepTurnSpan = one('sandkeep.turn')
    const tool = parent(sandkeepTurnSpan)
    expect(tool?.attributes, tree).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'runCode',
    })
    // The tool span descends from the caller's span, through the AI SDK's call and step spans.
    let ancestor = parent(tool)
    while (ancestor && ancestor !== byId.get(request.spanContext().spanId)) ancestor = parent(ancestor)
    expect(ancestor?.name, tree).toBe('chat-request')

    const resume = one('sandkeep.resume')
    expect(parent(resume), tree).toBe(sandkeepTurnSpan)
    expect(resume?.attributes['sandkeep.outcome']).toBe('created')
    const pause = one('sandkeep.pause')
    expect(parent(pause), tree).toBe(sandkeepTurnSpan)
    expect(pause?.attributes['sandkeep.pause.mode']).toBe('paused')
    expect(parent(one('sandkeep.store.acquire')), tree).toBe(sandkeepTurnSpan)
    expect(parent(one('sandkeep.store.setSandbox')), tree).toBe(resume)
    expect(parent(one('sandkeep.store.release')), tree).toBe(sandkeepTurnSpan)
    expect(sandkeepTurnSpan?.attributes).toMatchObject({
      'sandkeep.tenant': 'default',
      'sandkeep.outcome': 'created',
      'sandkeep.end.action': 'paused',
      'sandkeep.sandbox.id': resume?.attributes['sandkeep.sandbox.id'],
    })
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain(conversationId)
  }, 120_000)

  it('a turn that resumes as the call starts (resume: auto after a turn that used the sandbox) hangs under the caller', async () => {
    exporter.reset()
    const { model } = scriptedModel([{ text: 'no tool needed' }])
    const request = tracer.startSpan('chat-request')
    const turn = sandkeepTurn({ sessions, conversationId, resume: 'auto' })
    await context.with(trace.setSpan(context.active(), request), () =>
      turn.generateText({
        model,
        prompt: 'hi',
        experimental_telemetry: { isEnabled: true, integrations: [new OpenTelemetry({ tracer })] },
      }),
    )
    expect((await turn.ended)?.action).toBe('paused')
    request.end()
    const spans = exporter.getFinishedSpans()
    const tree = render(spans)
    const turnSpans = spans.filter((span) => span.name === 'sandkeep.turn')
    expect(turnSpans, tree).toHaveLength(1)
    expect(turnSpans[0]?.parentSpanContext?.spanId, tree).toBe(request.spanContext().spanId)
    const resume = spans.find((span) => span.name === 'sandkeep.resume')
    expect(resume?.parentSpanContext?.spanId, tree).toBe(turnSpans[0]?.spanContext().spanId)
  }, 120_000)

  it('the next turn resumes the paused sandbox with one sandkeep.health span per check under the resume', async () => {
    exporter.reset()
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCode', input: { code: 'x' } }] },
      { text: '42' },
    ])
    const turn = sandkeepTurn({ sessions, conversationId })
    await turn.generateText({
      model,
      prompt: 'again',
      stopWhen: stepCountIs(3),
      experimental_telemetry: { isEnabled: true, integrations: [new OpenTelemetry({ tracer })] },
    })
    await turn.ended
    const spans = exporter.getFinishedSpans()
    const tree = render(spans)
    const [resume] = spans.filter((span) => span.name === 'sandkeep.resume')
    expect(resume?.attributes, tree).toMatchObject({
      'sandkeep.outcome': 'resumed',
      'sandkeep.survived.memory': true,
      'sandkeep.survived.filesystem': true,
      'sandkeep.state_lost': false,
    })
    const health = spans.filter((span) => span.name === 'sandkeep.health')
    expect(health.map((span) => span.attributes['sandkeep.health.name']).sort(), tree).toEqual([
      'filesystem',
      'memory',
      'processes',
    ])
    for (const span of health) {
      expect(span.parentSpanContext?.spanId, tree).toBe(resume?.spanContext().spanId)
      expect(span.attributes['sandkeep.health.status'], tree).not.toBe('failed')
    }
    // Memory and files were compared with the manifest the first turn wrote; no process was started to compare.
    const ok = Object.fromEntries(
      health.map((span) => [span.attributes['sandkeep.health.name'], span.attributes['sandkeep.health.ok']]),
    )
    expect(ok).toMatchObject({ memory: true, filesystem: true })
  }, 120_000)
})
