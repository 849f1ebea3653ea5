// Observability: sandkeep's spans nest under the caller's span and each other, its metrics follow
// the store's accounting, and with telemetry off (or the API absent) nothing is wrapped.
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import * as otelApi from '@opentelemetry/api'
import { context, ProxyTracerProvider, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import { createMockProvider, type MockProviderOptions } from '@sandkeep/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import { hashConversationId } from '../contract/sandbox-metadata.js'
import type { SessionManagerOptions } from '../contract/session-manager-types.js'
import type { SessionStore } from '../contract/session-store.js'
import { setup as setupManager } from '../manager/manager.test-support.js'
import { createSessionManager } from '../manager/session-manager.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { loadOpenTelemetryApi } from './api.js'
import { createManagerTelemetry } from './index.js'
import { noopTurnTracer } from './tracer.js'

const contextManager = new AsyncLocalStorageContextManager()
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable())
})
afterAll(() => {
  context.disable()
})

function tracing() {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  return { exporter, tracer: provider.getTracer('test') }
}

// The manager's fixture, with two retries.
function setup(options: Partial<SessionManagerOptions>, providerOptions: MockProviderOptions = {}) {
  return setupManager(
    { retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 5 }, ...options },
    providerOptions,
  )
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId
const named = (spans: ReadableSpan[], name: string) => spans.filter((span) => span.name === name)

describe('telemetry: spans', () => {
  it('nests turn under the caller, and store, resume, health, rehydrate and pause under the turn', async () => {
    const { exporter, tracer } = tracing()
    const { sessions, id } = setup({ telemetry: { tracer } }, { pauseKeeps: { memory: false } })
    await sessions.withTurn(
      id,
      async (turn) => {
        await turn.sandbox.runCode('x = 41')
        await turn.journal.record({ kind: 'code', code: 'x = 41' })
      },
      { tenant: 'acme' },
    )
    exporter.reset()
    const request = tracer.startSpan('request')
    await context.with(trace.setSpan(context.active(), request), () =>
      sessions.withTurn(
        id,
        async () => {
          tracer.startSpan('user-work').end()
        },
        { tenant: 'acme' },
      ),
    )
    request.end()
    const spans = exporter.getFinishedSpans()
    const [turn] = named(spans, 'sandkeep.turn')
    expect(turn && parentOf(turn)).toBe(request.spanContext().spanId)
    const turnId = turn?.spanContext().spanId
    expect(turn?.attributes).toMatchObject({
      'sandkeep.tenant': 'acme',
      'sandkeep.conversation.hash': hashConversationId(id),
      'sandkeep.outcome': 'resumed',
      'sandkeep.end.action': 'paused',
    })
    expect(turn?.attributes['sandkeep.sandbox.id']).toEqual(expect.any(String))
    // The conversation id may be personal data: no span carries it.
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain(id)

    const [resume] = named(spans, 'sandkeep.resume')
    expect(resume && parentOf(resume)).toBe(turnId)
    expect(resume?.attributes).toMatchObject({
      'sandkeep.outcome': 'resumed',
      'sandkeep.survived.memory': false,
      'sandkeep.survived.filesystem': true,
      'sandkeep.state_lost': true,
    })
    const health = named(spans, 'sandkeep.health')
    expect(health.map((span) => span.attributes['sandkeep.health.name']).sort()).toEqual([
      'filesystem',
      'memory',
      'processes',
    ])
    for (const span of health) expect(parentOf(span)).toBe(resume?.spanContext().spanId)
    const memory = health.find((span) => span.attributes['sandkeep.health.name'] === 'memory')
    expect(memory?.attributes).toMatchObject({ 'sandkeep.health.ok': true, 'sandkeep.health.repaired': true })
    const [rehydrate] = named(spans, 'sandkeep.rehydrate')
    expect(rehydrate && parentOf(rehydrate)).toBe(resume?.spanContext().spanId)
    expect(rehydrate?.attributes).toMatchObject({ 'sandkeep.rehydrate.steps': 1 })
    const [pause] = named(spans, 'sandkeep.pause')
    expect(pause && parentOf(pause)).toBe(turnId)
    expect(pause?.attributes['sandkeep.pause.mode']).toBe('paused')
    const [acquire] = named(spans, 'sandkeep.store.acquire')
    expect(acquire && parentOf(acquire)).toBe(turnId)
    const [release] = named(spans, 'sandkeep.store.release')
    expect(release && parentOf(release)).toBe(turnId)
    const [readJournal] = named(spans, 'sandkeep.store.readJournal')
    expect(readJournal && parentOf(readJournal)).toBe(resume?.spanContext().spanId)
    // withTurn's body runs in the turn's context.
    const [work] = named(spans, 'user-work')
    expect(work && parentOf(work)).toBe(turnId)
  })

  it('a lazy turn resumes under its turn span, begun under the span active at beginTurn', async () => {
    const { exporter, tracer } = tracing()
    const { sessions, id } = setup({ telemetry: { tracer } })
    const tool = tracer.startSpan('tool')
    const turn = await context.with(trace.setSpan(context.active(), tool), () =>
      sessions.beginTurn(id, { lazy: true }),
    )
    // First use from elsewhere (another tool call's context): the resume still belongs to the turn.
    await turn.sandbox.runCommand('true')
    await turn.end()
    tool.end()
    const spans = exporter.getFinishedSpans()
    const [turnSpan] = named(spans, 'sandkeep.turn')
    expect(turnSpan && parentOf(turnSpan)).toBe(tool.spanContext().spanId)
    expect(turnSpan?.attributes['sandkeep.turn.lazy']).toBe(true)
    const [resume] = named(spans, 'sandkeep.resume')
    expect(resume && parentOf(resume)).toBe(turnSpan?.spanContext().spanId)
    expect(resume?.attributes['sandkeep.outcome']).toBe('created')
    const [create] = named(spans, 'sandkeep.store.setSandbox')
    expect(create && parentOf(create)).toBe(resume?.spanContext().spanId)
  })

  it('marks the turn and the store call ERROR with the SandkeepError code, nothing else', async () => {
    const { exporter, tracer } = tracing()
    const store = createMemorySessionStore()
    const failing: SessionStore = Object.create(store, {
      acquire: {
        value: async () => {
          throw new SandkeepError({ code: 'STORE_UNAVAILABLE', message: 'secret-host:6379 did not answer' })
        },
      },
    })
    const { sessions, id } = setup({ store: failing, telemetry: { tracer } })
    await expect(sessions.beginTurn(id)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' })
    const spans = exporter.getFinishedSpans()
    for (const name of ['sandkeep.turn', 'sandkeep.store.acquire']) {
      const [span] = named(spans, name)
      expect(span?.status).toEqual({ code: 2, message: 'STORE_UNAVAILABLE' })
      expect(span?.attributes['sandkeep.error.code']).toBe('STORE_UNAVAILABLE')
    }
    expect(JSON.stringify(spans.map((span) => [span.attributes, span.events, span.status]))).not.toContain(
      'secret-host',
    )
  })

  it('a failed pause is a failed sandkeep.pause span and marks the turn, with the code only', async () => {
    const { exporter, tracer } = tracing()
    const { provider, sessions, id } = setup({ telemetry: { tracer } })
    const turn = await sessions.beginTurn(id)
    provider.failNext('pause', 'SANDBOX_UNAVAILABLE', { times: 10 })
    expect((await turn.end()).error?.code).toBe('SANDBOX_UNAVAILABLE')
    const spans = exporter.getFinishedSpans()
    const [pause] = named(spans, 'sandkeep.pause')
    const [turnSpan] = named(spans, 'sandkeep.turn')
    expect(pause && parentOf(pause)).toBe(turnSpan?.spanContext().spanId)
    expect(pause?.attributes).toMatchObject({
      'sandkeep.pause.mode': 'pause',
      'sandkeep.error.code': 'SANDBOX_UNAVAILABLE',
    })
    expect(pause?.status.code).toBe(2)
    expect(turnSpan?.status).toEqual({ code: 2, message: 'SANDBOX_UNAVAILABLE' })
    expect(turnSpan?.attributes['sandkeep.end.action']).toBe('none')
  })

  it('rejects a malformed telemetry option before any I/O', () => {
    const provider = createMockProvider()
    const store = createMemorySessionStore()
    for (const telemetry of ['yes', { tracer: {} }, { meter: { createCounter() {} } }, { logger: {} }]) {
      expect(() =>
        createSessionManager({ store, provider, telemetry: telemetry as SessionManagerOptions['telemetry'] }),
      ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    }
    expect(provider.calls).toEqual([])
  })
})

describe('telemetry: no-op', () => {
  it('with telemetry: false or the API absent, the store is not wrapped and hooks call straight through', async () => {
    const store = createMemorySessionStore()
    const off = createManagerTelemetry(false, () => {
      throw new Error('no listener may be added')
    })
    const absent = createManagerTelemetry(
      undefined,
      () => {
        throw new Error('no listener may be added')
      },
      () => null,
    )
    for (const telemetry of [off, absent]) {
      expect(telemetry.instrumentStore(store)).toBe(store)
      expect(telemetry.tracer).toBe(noopTurnTracer)
      const work = Promise.resolve(42)
      expect(telemetry.tracer.resume({}, () => work)).toBe(work)
      expect(telemetry.tracer.within({}, () => work)).toBe(work)
    }
    // And a manager with telemetry off runs its turns as usual.
    const { sessions, id } = setup({ telemetry: false })
    expect(await sessions.withTurn(id, async (turn) => turn.report?.outcome)).toBe('created')
  })

  it('with the API installed but no SDK registered, no span is started and the store calls go straight through', async () => {
    // The API as a dependency pulls it in, with its no-op global providers: every span would be a no-op,
    // and making them cost about half a millisecond a turn in the overhead bench.
    let started = 0
    const tracer = {
      startSpan: () => {
        started++
        return { setAttribute: () => undefined, setStatus: () => undefined, end: () => undefined }
      },
    }
    const noopProvider = new ProxyTracerProvider()
    const unregistered = {
      context,
      trace: { getTracer: () => tracer, setSpan: trace.setSpan, getTracerProvider: () => noopProvider },
      metrics: {
        getMeter: () => meter,
        getMeterProvider: () => ({ constructor: { name: 'NoopMeterProvider' } }),
      },
      createContextKey: (name: string) => Symbol(name),
    }
    const meter = { createHistogram: () => ({ record() {} }), createCounter: () => ({ add() {} }) }
    const listeners: Array<(payload: never) => void> = []
    const telemetry = createManagerTelemetry(
      undefined,
      (_event, listener) => listeners.push(listener as never),
      () => unregistered as never,
    )
    const store = createMemorySessionStore()
    const wrapped = telemetry.instrumentStore(store)
    const key = { tenant: 'default', conversationId: `c-${randomUUID()}` }
    expect(await telemetry.tracer.turn(key.conversationId, {}, async () => ({ ok: true }))).toEqual({
      ok: true,
    })
    await wrapped.get(key)
    expect(started).toBe(0)
    // Once an SDK registers a provider, the next turn is traced.
    noopProvider.setDelegate(new BasicTracerProvider())
    await telemetry.tracer.turn(key.conversationId, {}, async () => ({ ok: true }))
    await wrapped.get(key)
    expect(started).toBe(2)
  })
})

describe('telemetry: metrics', () => {
  it('records ready latency, resumes by outcome, state loss and running/paused seconds by tenant', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
    const meterProvider = new MeterProvider({ readers: [reader] })
    const { provider, sessions, id } = setup({ telemetry: { meter: meterProvider.getMeter('test') } })
    const tenant = `t-${randomUUID().slice(0, 8)}`
    await sessions.withTurn(id, async (turn) => turn.sandbox.runCode('x = 1'), { tenant })
    // A pause that lasts a little, so the resume has paused time to account.
    await new Promise((resolve) => setTimeout(resolve, 20))
    const second = await sessions.withTurn(id, async (turn) => turn.report?.sandboxId, { tenant })
    provider.expire(second ?? '')
    await sessions.withTurn(id, async () => {}, { tenant })
    const { resourceMetrics } = await reader.collect()
    const metrics = new Map(
      resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).map((m) => [m.descriptor.name, m]),
    )
    const points = (name: string) => metrics.get(name)?.dataPoints ?? []
    const byOutcome = Object.fromEntries(
      points('sandkeep.resumes').map((p) => [p.attributes['sandkeep.outcome'], p.value]),
    )
    expect(byOutcome).toEqual({ created: 1, resumed: 1, recreated: 1 })
    expect(points('sandkeep.state_lost').map((p) => [p.attributes['sandkeep.outcome'], p.value])).toEqual([
      ['recreated', 1],
    ])
    const ready = points('sandkeep.turn.ready.duration')
    expect(ready.reduce((sum, p) => sum + (p.value as { count: number }).count, 0)).toBe(3)
    // Durations in seconds, as OpenTelemetry's semantic conventions have them; the ms one is kept, deprecated.
    expect(metrics.get('sandkeep.turn.ready.duration')?.descriptor.unit).toBe('s')
    const sumOf = (name: string) => points(name).reduce((sum, p) => sum + (p.value as { sum: number }).sum, 0)
    expect(sumOf('sandkeep.turn.ready.duration') * 1000).toBeCloseTo(sumOf('sandkeep.turn.ready'), 6)
    expect(metrics.get('sandkeep.turn.ready')?.descriptor.unit).toBe('ms')
    expect(metrics.get('sandkeep.pause.duration')?.descriptor.unit).toBe('s')
    expect(
      points('sandkeep.pause.duration').reduce((sum, p) => sum + (p.value as { count: number }).count, 0),
    ).toBe(3)
    // The counters add up to what the store accounted for the session.
    const record = await sessions.getSession(id, { tenant })
    const [running] = points('sandkeep.sandbox.running')
    const [paused] = points('sandkeep.sandbox.paused')
    expect(running?.attributes).toEqual({ 'sandkeep.tenant': tenant })
    expect(running?.value).toBeCloseTo(record?.runningSeconds ?? -1, 6)
    expect(paused?.value).toBeCloseTo(record?.pausedSeconds ?? -1, 6)
    expect(record?.pausedSeconds).toBeGreaterThan(0)
    await meterProvider.shutdown()
  })
})

describe('telemetry: checkpoint, rewind and fork', () => {
  it('a turn end with checkpoints has a sandkeep.checkpoint span under the turn; rewind and fork have theirs', async () => {
    const { exporter, tracer } = tracing()
    const exporterMetrics = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({
      exporter: exporterMetrics,
      exportIntervalMillis: 3_600_000,
    })
    const meterProvider = new MeterProvider({ readers: [reader] })
    const { sessions, id } = setup({
      telemetry: { tracer, meter: meterProvider.getMeter('test') },
      checkpoints: { every: 'turn', keep: 5 },
    })
    for (const code of ['a = 1', 'b = 2']) {
      await sessions.withTurn(id, async (turn) => {
        await turn.sandbox.runCode(code)
        await turn.journal.record({ kind: 'code', code })
      })
    }
    const spans = exporter.getFinishedSpans()
    const checkpoints = named(spans, 'sandkeep.checkpoint')
    expect(checkpoints).toHaveLength(2)
    const turns = named(spans, 'sandkeep.turn')
    for (const span of checkpoints) {
      expect(turns.map((turn) => turn.spanContext().spanId)).toContain(parentOf(span))
      expect(span.attributes).toMatchObject({
        'sandkeep.checkpoint.taken': true,
        'sandkeep.checkpoint.snapshot': true,
        'sandkeep.checkpoint.fresh': true,
        'sandkeep.conversation.hash': hashConversationId(id),
      })
    }
    // The snapshot call is the checkpoint's child work: nothing else in the turn takes its time.
    const [first] = checkpoints
    expect(first && first.duration[0] * 1e3 + first.duration[1] / 1e6).toBeGreaterThanOrEqual(0)

    exporter.reset()
    const forked = `fork-${randomUUID()}`
    await sessions.fork(id, forked, { atTurn: 1 })
    await sessions.rewind(id, { toTurn: 1 })
    await expect(sessions.rewind(id, { toTurn: 9 })).rejects.toMatchObject({ code: 'CHECKPOINT_NOT_FOUND' })
    const after = exporter.getFinishedSpans()
    const [fork] = named(after, 'sandkeep.fork')
    expect(fork?.attributes).toMatchObject({
      'sandkeep.fork.at_turn': 1,
      'sandkeep.restore.source': 'snapshot',
      'sandkeep.fork.conversation.hash': hashConversationId(forked),
    })
    const rewinds = named(after, 'sandkeep.rewind')
    expect(
      rewinds.map((span) => span.attributes['sandkeep.rewind.to_turn'] ?? span.attributes['error.type']),
    ).toEqual([1, 'CHECKPOINT_NOT_FOUND'])
    expect(rewinds[1]?.status.code).toBe(2)
    // Their store calls nest under them.
    const forkCalls = after.filter(
      (span) => span.name.startsWith('sandkeep.store.') && parentOf(span) === fork?.spanContext().spanId,
    )
    expect(forkCalls.length).toBeGreaterThan(0)
    expect(JSON.stringify(after.map((span) => span.attributes))).not.toContain(id)

    const { resourceMetrics } = await reader.collect()
    const checkpointMetric = resourceMetrics.scopeMetrics
      .flatMap((scope) => scope.metrics)
      .find((metric) => metric.descriptor.name === 'sandkeep.checkpoint.duration')
    expect(checkpointMetric?.descriptor.unit).toBe('s')
    expect(
      checkpointMetric?.dataPoints.reduce((sum, p) => sum + (p.value as { count: number }).count, 0),
    ).toBe(2)
    await meterProvider.shutdown()
  })
})

describe('telemetry: loading the API', () => {
  it('loads @opentelemetry/api with a dynamic import (no createRequire), or takes the module as an option', async () => {
    const source = readFileSync(new URL('./api.ts', import.meta.url), 'utf8')
    expect(source).not.toContain('createRequire')
    expect(source).toContain("import('@opentelemetry/api')")
    const loaded = await loadOpenTelemetryApi()
    expect(loaded?.trace).toBe(trace)
    // Given as an option, the API's global tracer is used (no tracer passed): spans nest under the caller's.
    const { exporter, tracer } = tracing()
    const proxy = new ProxyTracerProvider()
    proxy.setDelegate({ getTracer: () => tracer } as never)
    const api = { ...otelApi, trace: { ...trace, getTracer: () => tracer, getTracerProvider: () => proxy } }
    const { sessions, id } = setup({ telemetry: { api: api as never } })
    const request = tracer.startSpan('request')
    await context.with(trace.setSpan(context.active(), request), () => sessions.withTurn(id, async () => {}))
    request.end()
    const [turn] = named(exporter.getFinishedSpans(), 'sandkeep.turn')
    expect(turn && parentOf(turn)).toBe(request.spanContext().spanId)
    expect(() => createSessionManager({ ...setupOptionsOf(), telemetry: { api: {} as never } })).toThrow(
      /must be the @opentelemetry\/api module/,
    )
  })

  it('a manager made while the import is pending waits for it: its first turn is traced', async () => {
    const { exporter, tracer } = tracing()
    const { promise, resolve } = Promise.withResolvers<typeof otelApi | null>()
    const listeners = new Map<string, Array<(payload: never) => void>>()
    const telemetry = createManagerTelemetry(
      { tracer },
      (event, listener) => listeners.set(event, [...(listeners.get(event) ?? []), listener as never]),
      () => promise as never,
    )
    const store = telemetry.instrumentStore(createMemorySessionStore())
    const key = { tenant: 'default', conversationId: `c-${randomUUID()}` }
    const turn = telemetry.tracer.turn(key.conversationId, {}, async () => {
      await store.get(key)
      return { ok: true }
    })
    resolve(otelApi)
    expect(await turn).toEqual({ ok: true })
    const spans = exporter.getFinishedSpans()
    const [get] = named(spans, 'sandkeep.store.get')
    expect(get && parentOf(get)).toBeDefined()
    expect(listeners.size).toBeGreaterThan(0)
  })
})

function setupOptionsOf() {
  return { store: createMemorySessionStore(), provider: createMockProvider() }
}
