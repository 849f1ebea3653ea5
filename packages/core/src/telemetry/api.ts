import { SandkeepError } from '../contract/errors.js'
import type { NamesEveryOption } from '../contract/option-names.js'

/** Attribute values sandkeep sets on spans and measurements. */
export type TelemetryAttributes = Record<string, string | number | boolean>

/** The part of an OpenTelemetry `Span` sandkeep uses. */
export interface TelemetrySpan {
  /** Sets one attribute. */
  setAttribute(key: string, value: string | number | boolean): unknown
  /** Sets the status; `code` 2 is ERROR. */
  setStatus(status: { code: number; message?: string }): unknown
  /** Ends the span; `endTime` in epoch ms, default now. */
  end(endTime?: number): void
}

/** The part of an OpenTelemetry `Context` sandkeep uses. */
export interface TelemetryContext {
  /** Reads a value set under `key`. */
  getValue(key: symbol): unknown
  /** A new context with `key` set. */
  setValue(key: symbol, value: unknown): TelemetryContext
}

/** The part of an OpenTelemetry `Tracer` sandkeep uses (any `@opentelemetry/api` 1.x tracer fits). */
export interface TelemetryTracer {
  /** Starts a span; `startTime` in epoch ms. */
  startSpan(
    name: string,
    options?: { attributes?: TelemetryAttributes; startTime?: number },
    context?: TelemetryContext,
  ): TelemetrySpan
}

/** The part of an OpenTelemetry `Meter` sandkeep uses (any `@opentelemetry/api` 1.x meter fits). */
export interface TelemetryMeter {
  /** A histogram instrument. */
  createHistogram(
    name: string,
    options?: { description?: string; unit?: string },
  ): { record(value: number, attributes?: TelemetryAttributes): void }
  /** A monotonic counter instrument. */
  createCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): { add(value: number, attributes?: TelemetryAttributes): void }
}

/**
 * `createSessionManager`'s `telemetry` option: `false` turns telemetry off; an object may bring its own
 * tracer and meter. Left out (or `{}`), sandkeep uses the global ones of `@opentelemetry/api` when that
 * optional peer is installed, and does nothing when it is not.
 */
export type TelemetryOption =
  | false
  | {
      /** Tracer for sandkeep's spans; default the global tracer `@sandkeep/core`. */
      tracer?: TelemetryTracer
      /** Meter for sandkeep's metrics; default the global meter `@sandkeep/core`. */
      meter?: TelemetryMeter
      /**
       * The `@opentelemetry/api` module (`import * as api from '@opentelemetry/api'`), for spans' context and
       * the global tracer and meter. Default: sandkeep loads it with a dynamic `import()` at the first
       * createSessionManager (turns begun before it settles wait for it); pass it where that import cannot
       * run or should not (a bundle that leaves optional peers out, a second copy of the API).
       */
      api?: OpenTelemetryApi
    }

type TelemetrySettings = Exclude<TelemetryOption, false>
/** Every option name of the `telemetry` option object. */
const TELEMETRY_OPTION_NAMES = [
  'tracer',
  'meter',
  'api',
] as const satisfies readonly (keyof TelemetrySettings)[]
const optionListComplete: NamesEveryOption<TelemetrySettings, typeof TELEMETRY_OPTION_NAMES> = true
void optionListComplete

/** The part of the `@opentelemetry/api` module sandkeep uses. */
export interface OpenTelemetryApi {
  context: {
    active(): TelemetryContext
    with<T>(context: TelemetryContext, fn: () => T): T
  }
  trace: {
    getTracer(name: string, version?: string): TelemetryTracer
    setSpan(context: TelemetryContext, span: TelemetrySpan): TelemetryContext
    /** The global provider: a proxy whose delegate is the API's no-op one until an SDK registers. */
    getTracerProvider?(): unknown
  }
  metrics: {
    getMeter(name: string, version?: string): TelemetryMeter
    /** The global provider, the API's no-op one until an SDK registers. */
    getMeterProvider?(): unknown
  }
  createContextKey(description: string): symbol
}

/** The API once its import settled (null: not installed); undefined before. */
let cached: OpenTelemetryApi | null | undefined
let loading: Promise<OpenTelemetryApi | null> | undefined

/**
 * True when an SDK has registered a real global provider behind the API: with only the API installed (a
 * dependency pulled it in) every span and instrument is a no-op, and skipping them keeps a turn's cost where
 * it is without telemetry. A provider without the API's classes (another implementation) counts as real.
 */
export function isRealProvider(provider: unknown): boolean {
  const delegate = (provider as { getDelegate?: () => unknown } | undefined)?.getDelegate?.() ?? provider
  if (delegate === undefined || delegate === null) return false
  const name = (delegate as { constructor?: { name?: unknown } }).constructor?.name
  return name !== 'NoopTracerProvider' && name !== 'NoopMeterProvider'
}

/**
 * Loads `@opentelemetry/api` on first use, never at module load: it is an optional peer, and a process
 * without it must run sandkeep unchanged. A plain dynamic `import()` (not a CommonJS require), so bundlers see
 * it; the API keeps its registry on globalThis, so this copy sees the provider the app registered. Returns
 * the module (or null: not installed) once the import settled, the pending import before.
 */
export function loadOpenTelemetryApi(): OpenTelemetryApi | null | Promise<OpenTelemetryApi | null> {
  if (cached !== undefined) return cached
  loading ??= import('@opentelemetry/api').then(
    (module) => {
      cached = module as unknown as OpenTelemetryApi
      return cached
    },
    () => {
      cached = null
      return null
    },
  )
  return loading
}

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

/** Checks the `telemetry` option's shape before the manager does anything. */
export function validateTelemetryOption(option: unknown): TelemetryOption | undefined {
  if (option === undefined || option === false) return option
  if (typeof option !== 'object' || option === null) {
    throw invalid('options.telemetry must be false or an object { tracer?, meter? }.')
  }
  for (const key of Object.keys(option)) {
    if (!(TELEMETRY_OPTION_NAMES as readonly string[]).includes(key))
      throw invalid(
        `options.telemetry has an unknown option '${key}'. Known: ${TELEMETRY_OPTION_NAMES.join(', ')}.`,
      )
  }
  const { tracer, meter, api } = option as { tracer?: unknown; meter?: unknown; api?: unknown }
  if (api !== undefined) {
    const candidate = api as Partial<OpenTelemetryApi> | null
    if (
      typeof candidate?.context?.with !== 'function' ||
      typeof candidate.trace?.getTracer !== 'function' ||
      typeof candidate.metrics?.getMeter !== 'function' ||
      typeof candidate.createContextKey !== 'function'
    ) {
      throw invalid(
        "options.telemetry.api must be the @opentelemetry/api module (import * as api from '@opentelemetry/api').",
      )
    }
  }
  if (tracer !== undefined && typeof (tracer as TelemetryTracer | null)?.startSpan !== 'function') {
    throw invalid('options.telemetry.tracer must be an OpenTelemetry Tracer (with startSpan).')
  }
  if (
    meter !== undefined &&
    (typeof (meter as TelemetryMeter | null)?.createHistogram !== 'function' ||
      typeof (meter as TelemetryMeter | null)?.createCounter !== 'function')
  ) {
    throw invalid(
      'options.telemetry.meter must be an OpenTelemetry Meter (with createHistogram, createCounter).',
    )
  }
  return option as TelemetryOption
}
