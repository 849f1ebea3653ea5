import { createRequire } from 'node:module'
import { SandkeepError } from '../errors.js'
import type { NamesEveryOption } from '../option-names.js'

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
    }

type TelemetrySettings = Exclude<TelemetryOption, false>
/** Every option name of the `telemetry` option object. */
const TELEMETRY_OPTION_NAMES = ['tracer', 'meter'] as const satisfies readonly (keyof TelemetrySettings)[]
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

let cached: OpenTelemetryApi | null | undefined

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
 * without it must run sandkeep unchanged. Null when it is not installed.
 */
export function loadOpenTelemetryApi(): OpenTelemetryApi | null {
  if (cached !== undefined) return cached
  try {
    // require, not import(): createSessionManager is synchronous. The API keeps its registry on globalThis,
    // so this copy sees the provider an ESM import registered.
    cached = createRequire(import.meta.url)('@opentelemetry/api') as OpenTelemetryApi
  } catch {
    cached = null
  }
  return cached
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
  const { tracer, meter } = option as { tracer?: unknown; meter?: unknown }
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
