import type { SessionStore } from '../contract/session-store.js'
import { SANDKEEP_VERSION } from '../contract/version.js'
import {
  isRealProvider,
  loadOpenTelemetryApi,
  type OpenTelemetryApi,
  type TelemetryOption,
  validateTelemetryOption,
} from './api.js'
import { instrumentStore, STORE_METHODS } from './instrument-store.js'
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

const OFF: ManagerTelemetry = { tracer: noopTurnTracer, instrumentStore: (store) => store }

/**
 * Resolves the `telemetry` option: `false` turns everything off; otherwise the given tracer/meter, or the
 * global ones of `@opentelemetry/api` (the option's `api`, else loaded with a dynamic import). While that
 * import is pending the hooks wait for it; once it settled (and for later managers at once) they are the
 * plain ones. With neither a tracer nor a meter, every hook is a plain call. `load` is replaceable so tests
 * can simulate a process without the API.
 * @throws SandkeepError INVALID_ARGUMENT when the option has the wrong shape.
 */
export function createManagerTelemetry(
  option: unknown,
  on: Subscribe,
  load: typeof loadOpenTelemetryApi = loadOpenTelemetryApi,
): ManagerTelemetry {
  const settings = validateTelemetryOption(option)
  if (settings === false) return OFF
  const api = settings?.api ?? load()
  if (api instanceof Promise) return deferred(api.then((loaded) => build(settings, loaded, on)))
  return build(settings, api, on)
}

function build(
  settings: Exclude<TelemetryOption, false> | undefined,
  api: OpenTelemetryApi | null,
  on: Subscribe,
): ManagerTelemetry {
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
  if (metrics) {
    on('resume-end', ({ report }) => metrics.resumed(report))
    on('turn-end', ({ tenant, end }) => metrics.ended(tenant, end))
  }
  if (!tracing && !metrics) return OFF
  return {
    tracer: tracing ? createTurnTracer(tracing, on) : noopTurnTracer,
    instrumentStore: (store) => instrumentStore(store, tracing, metrics),
  }
}

/** The telemetry while `@opentelemetry/api` loads: each hook waits for it, then is the loaded one. */
function deferred(pending: Promise<ManagerTelemetry>): ManagerTelemetry {
  let ready: ManagerTelemetry | undefined
  const settled = pending.then((telemetry) => {
    ready = telemetry
    return telemetry
  })
  const now = async () => ready ?? (await settled)
  const tracer: TurnTracer = {
    turn: async (conversationId, options, begin) => (await now()).tracer.turn(conversationId, options, begin),
    resume: async (turn, run) => (await now()).tracer.resume(turn, run),
    // A turn's context exists only once its turn() ran, which waited for the load.
    within: (turn, run) => (ready ? ready.tracer.within(turn, run) : run()),
    phase: async (name, attributes, run, after) => (await now()).tracer.phase(name, attributes, run, after),
  }
  return {
    tracer,
    instrumentStore(store) {
      let wrapped: SessionStore | undefined
      const target = async () => {
        wrapped ??= (await now()).instrumentStore(store)
        return wrapped
      }
      // Methods shadowed on an object that inherits the rest (storeId, optional extras), as instrumentStore does.
      const lazy = Object.create(store) as SessionStore
      for (const method of STORE_METHODS) {
        if (typeof Reflect.get(store, method) !== 'function') continue
        const call = async (...args: unknown[]) => {
          const inner = wrapped ?? (await target())
          return (Reflect.get(inner, method) as (...args: unknown[]) => Promise<unknown>).apply(inner, args)
        }
        Object.defineProperty(lazy, method, { value: call, enumerable: true })
      }
      return lazy
    },
  }
}
