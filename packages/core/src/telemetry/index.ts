import type { SessionStore } from '../session-store.js'
import { SANDKEEP_VERSION } from '../version.js'
import { isRealProvider, loadOpenTelemetryApi, validateTelemetryOption } from './api.js'
import { instrumentStore } from './instrument-store.js'
import { createSandkeepMetrics } from './metrics.js'
import { createTurnTracer, noopTurnTracer, type Subscribe, type TurnTracer } from './tracer.js'

export type { TelemetryMeter, TelemetryOption, TelemetrySpan, TelemetryTracer } from './api.js'

/** What the session manager calls: span hooks and the store it should use. */
export interface ManagerTelemetry {
  /** Span hooks (no-ops when tracing is off). */
  readonly tracer: TurnTracer
  /** The store wrapped for spans and accounting, or the same store when both are off. */
  instrumentStore(store: SessionStore): SessionStore
}

/**
 * Resolves the `telemetry` option: `false` turns everything off; otherwise the given tracer/meter, or the
 * global ones when `@opentelemetry/api` can be loaded. With neither, every hook is a plain call.
 * `load` is replaceable so tests can simulate a process without the API.
 * @throws SandkeepError INVALID_ARGUMENT when the option has the wrong shape.
 */
export function createManagerTelemetry(
  option: unknown,
  on: Subscribe,
  load: typeof loadOpenTelemetryApi = loadOpenTelemetryApi,
): ManagerTelemetry {
  const settings = validateTelemetryOption(option)
  if (settings === false) return { tracer: noopTurnTracer, instrumentStore: (store) => store }
  const api = load()
  const tracer = settings?.tracer ?? api?.trace.getTracer('@sandkeep/core', SANDKEEP_VERSION)
  // The API's global meter never upgrades its instruments once made, so a provider must be there now.
  const globalMeter = api && isRealProvider(api.metrics.getMeterProvider?.()) ? api.metrics : undefined
  const meter = settings?.meter ?? globalMeter?.getMeter('@sandkeep/core', SANDKEEP_VERSION)
  // Spans nest through the API's context; a tracer without it could only make disconnected roots.
  // A tracer passed in always records; so does an API too old to show its provider (nothing to check).
  const trace = settings?.tracer || !api?.trace.getTracerProvider ? undefined : api.trace
  const enabled = trace ? () => isRealProvider(trace.getTracerProvider?.()) : () => true
  const tracing = api && tracer ? { api, tracer, enabled } : undefined
  const metrics = meter ? createSandkeepMetrics(meter) : undefined
  if (metrics) on('resume-end', ({ report }) => metrics.resumed(report))
  return {
    tracer: tracing ? createTurnTracer(tracing, on) : noopTurnTracer,
    instrumentStore: (store) => instrumentStore(store, tracing, metrics),
  }
}
