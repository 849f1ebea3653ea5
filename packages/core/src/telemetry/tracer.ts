import { SandkeepError } from '../contract/errors.js'
import type { HealthCheckResult } from '../contract/health.js'
import type { ResumeReport } from '../contract/report.js'
import { hashConversationId } from '../contract/sandbox-metadata.js'
import type { SessionManagerEvents } from '../contract/session-manager-types.js'
import type {
  OpenTelemetryApi,
  TelemetryAttributes,
  TelemetryContext,
  TelemetrySpan,
  TelemetryTracer,
} from './api.js'

// Epoch ms with sub-ms precision, so a span reconstructed from a measured duration sorts right among its siblings.
const preciseNow = () => performance.timeOrigin + performance.now()

/** A tracer with the API whose context carries the parent spans. */
export interface Tracing {
  api: OpenTelemetryApi
  tracer: TelemetryTracer
  /**
   * Whether spans are worth making now: always for a tracer passed in; for the global one, once an SDK has
   * registered a provider (read at each turn, so a provider registered after createSessionManager counts).
   */
  enabled(): boolean
}

// OpenTelemetry's SpanStatusCode.ERROR; a constant so that nothing loads the API to read it.
const STATUS_ERROR = 2

/**
 * Marks a span failed with the error's code. Only the code: messages and causes can carry ids, paths or a
 * provider's response, and a trace backend is no place for them.
 */
export function failSpan(span: TelemetrySpan, error: unknown): void {
  const code = SandkeepError.isInstance(error) ? error.code : 'UNKNOWN'
  span.setAttribute('sandkeep.error.code', code)
  span.setAttribute('error.type', code)
  span.setStatus({ code: STATUS_ERROR, message: code })
}

/** Tenant and conversation hash of a store call's first argument (a session key, or a tenant for `list`). */
export function sessionAttributes(first: unknown): TelemetryAttributes {
  if (typeof first === 'string') return { 'sandkeep.tenant': first }
  if (typeof first !== 'object' || first === null) return {}
  const { tenant, conversationId } = first as { tenant?: unknown; conversationId?: unknown }
  return {
    ...(typeof tenant === 'string' ? { 'sandkeep.tenant': tenant } : {}),
    // The id itself may be personal data: only the hash the sandbox metadata also carries.
    ...(typeof conversationId === 'string'
      ? { 'sandkeep.conversation.hash': hashConversationId(conversationId) }
      : {}),
  }
}

/** One turn's span and whether it has ended, kept in the context of everything the turn does. */
interface TurnState {
  span: TelemetrySpan
  ended: boolean
}

/** The manager's tracing hooks. */
export interface TurnTracer {
  /** Runs `begin` (beginTurn's body) with a new `sandkeep.turn` span active, child of the caller's span. */
  turn<T extends object>(conversationId: unknown, options: unknown, begin: () => Promise<T>): Promise<T>
  /** Runs a turn's resume with a `sandkeep.resume` span active, child of the turn's span. */
  resume<T>(turn: object, run: () => Promise<T>): Promise<T>
  /** Runs `run` in the turn's context (its end, withTurn's body), so what it does nests under the turn. */
  within<T>(turn: object, run: () => T): T
  /**
   * Runs one phase or operation (`sandkeep.checkpoint` at a turn's end, `sandkeep.rewind`, `sandkeep.fork`;
   * `sandkeep.restore` is meant to go through here too) with its span active, a child of the active span, so
   * its store and provider calls nest under it. `after` adds attributes from the result; a throw marks the
   * span failed with the error's code.
   */
  phase<T>(
    name: string,
    attributes: TelemetryAttributes,
    run: () => Promise<T>,
    after?: (result: T) => TelemetryAttributes,
  ): Promise<T>
}

const attributesOf = (report: ResumeReport): TelemetryAttributes => {
  const attributes: TelemetryAttributes = {
    'sandkeep.sandbox.id': report.sandboxId,
    'sandkeep.outcome': report.outcome,
    'sandkeep.state_lost': report.stateLost,
    'sandkeep.retries': report.retries,
    'sandkeep.rehydrated_steps': report.rehydratedSteps,
  }
  // null means nothing to compare with: left out rather than guessed.
  for (const [what, kept] of Object.entries(report.survived)) {
    if (kept !== null) attributes[`sandkeep.survived.${what}`] = kept
  }
  return attributes
}

/** The manager's `on`, as the telemetry subscribes to its events. */
export type Subscribe = <E extends keyof SessionManagerEvents>(
  event: E,
  listener: (payload: SessionManagerEvents[E]) => void,
) => unknown

/** The tracer, the context keys of the turn's and the resume's spans, and readers of the active context. */
interface Scope extends Tracing {
  readonly TURN: symbol
  readonly RESUME: symbol
  active(): TelemetryContext
  turnOf(context: TelemetryContext): TurnState | undefined
  /** A span for a phase that already ended now and took `ms`. */
  measured(name: string, ms: number, attributes: TelemetryAttributes): void
}

function createScope({ api, tracer, enabled }: Tracing): Scope {
  const TURN = api.createContextKey('sandkeep.turn')
  const active = () => api.context.active()
  return {
    api,
    tracer,
    enabled,
    TURN,
    RESUME: api.createContextKey('sandkeep.resume'),
    active,
    turnOf: (context) => context.getValue(TURN) as TurnState | undefined,
    measured(name, ms, attributes) {
      const now = preciseNow()
      tracer.startSpan(name, { attributes, startTime: now - ms }, active()).end(now)
    },
  }
}

/**
 * Creates the span hooks and subscribes to the manager's events. Phases the manager measures and reports
 * by event (health checks, rehydrate, pause) become spans ending at the event and starting the measured
 * duration earlier; they are children of the span active at the event (the resume's, or the turn's).
 */
export function createTurnTracer(tracing: Tracing, on: Subscribe): TurnTracer {
  const scope = createScope(tracing)
  subscribePhaseSpans(scope, on)
  const { api, tracer, active } = scope
  const turnContexts = new WeakMap<object, TelemetryContext>()
  return {
    async turn(conversationId, options, begin) {
      if (!scope.enabled()) return begin()
      const parent = active()
      const tenant = (options as { tenant?: unknown } | undefined)?.tenant
      const span = tracer.startSpan(
        'sandkeep.turn',
        {
          attributes: {
            ...sessionAttributes({ tenant: tenant ?? 'default', conversationId }),
            // A prewarmed turn is lazy too: beginTurn does not wait for its resume.
            'sandkeep.turn.lazy': isLazy(options),
          },
        },
        parent,
      )
      const state: TurnState = { span, ended: false }
      const context = api.trace.setSpan(parent, span).setValue(scope.TURN, state)
      try {
        const turn = await api.context.with(context, begin)
        turnContexts.set(turn, context)
        return turn
      } catch (error) {
        // Failed before a turn existed (bad input, store down): nothing else ends this span.
        if (!state.ended) {
          state.ended = true
          failSpan(span, error)
          span.end()
        }
        throw error
      }
    },
    async resume(turn, run) {
      const turnContext = turnContexts.get(turn)
      if (!turnContext && !scope.enabled()) return run()
      const parent = turnContext ?? active()
      const span = tracer.startSpan('sandkeep.resume', {}, parent)
      try {
        return await api.context.with(api.trace.setSpan(parent, span).setValue(scope.RESUME, span), run)
      } catch (error) {
        failSpan(span, error)
        const state = scope.turnOf(parent)
        if (state && !state.ended) failSpan(state.span, error)
        throw error
      } finally {
        span.end()
      }
    },
    within(turn, run) {
      const context = turnContexts.get(turn)
      return context ? api.context.with(context, run) : run()
    },
    async phase(name, attributes, run, after) {
      const parent = active()
      if (!scope.enabled() && !scope.turnOf(parent)) return run()
      const span = tracer.startSpan(name, { attributes }, parent)
      try {
        const result = await api.context.with(api.trace.setSpan(parent, span), run)
        for (const [key, value] of Object.entries(after?.(result) ?? {})) span.setAttribute(key, value)
        return result
      } catch (error) {
        failSpan(span, error)
        throw error
      } finally {
        span.end()
      }
    },
  }
}

/** The spans of the phases the manager reports by event, and the attributes of the turn's and resume's spans. */
function subscribePhaseSpans(scope: Scope, subscribe: Subscribe): void {
  const { tracer, active, turnOf, measured } = scope
  // Phase spans only inside a traced turn (or while a provider is registered): nothing to do otherwise.
  const on: Subscribe = (event, listener) =>
    subscribe(event, (payload) => {
      if (scope.enabled() || turnOf(active())) listener(payload)
    })
  on('resume-end', ({ report }) => {
    const context = active()
    const resume = context.getValue(scope.RESUME) as TelemetrySpan | undefined
    const attributes = attributesOf(report)
    for (const [key, value] of Object.entries(attributes)) resume?.setAttribute(key, value)
    const turn = turnOf(context)
    turn?.span.setAttribute('sandkeep.sandbox.id', report.sandboxId)
    turn?.span.setAttribute('sandkeep.outcome', report.outcome)
  })
  on('health-check', ({ sandboxId, result }) => healthSpan(scope, sandboxId, result))
  on('rehydrate', ({ sandboxId, steps, failed, ms, reason }) => {
    measured('sandkeep.rehydrate', ms, {
      'sandkeep.sandbox.id': sandboxId,
      'sandkeep.rehydrate.steps': steps,
      'sandkeep.rehydrate.failed': failed,
      'sandkeep.rehydrate.reason': reason,
    })
  })
  on('pause-end', ({ sandboxId, action, ms }) => {
    measured('sandkeep.pause', ms, { 'sandkeep.sandbox.id': sandboxId, 'sandkeep.pause.mode': action })
  })
  on('error', ({ phase, error }) => {
    // A failed end action emits no pause-end: its span says what was tried and the code it failed with.
    if (phase !== 'pause' && phase !== 'auto-pause' && phase !== 'kill') return
    const span = tracer.startSpan(
      'sandkeep.pause',
      { attributes: { 'sandkeep.pause.mode': phase } },
      active(),
    )
    failSpan(span, error)
    span.end()
  })
  on('turn-end', ({ report, end }) => {
    const traced = turnOf(active())
    if (!traced || traced.ended) return
    traced.ended = true
    traced.span.setAttribute('sandkeep.outcome', report?.outcome ?? 'unused')
    if (report) traced.span.setAttribute('sandkeep.sandbox.id', report.sandboxId)
    traced.span.setAttribute('sandkeep.end.action', end.action)
    traced.span.setAttribute('sandkeep.end.last', end.last)
    if (end.error) {
      traced.span.setAttribute('sandkeep.error.code', end.error.code)
      traced.span.setStatus({ code: STATUS_ERROR, message: end.error.code })
    }
    traced.span.end()
  })
}

/** A health check's span, from its probe's start to now (probe and repair). */
function healthSpan(scope: Scope, sandboxId: string, result: HealthCheckResult): void {
  const now = preciseNow()
  const span = scope.tracer.startSpan(
    'sandkeep.health',
    {
      attributes: {
        'sandkeep.sandbox.id': sandboxId,
        'sandkeep.health.name': result.name,
        'sandkeep.health.kind': result.kind,
        'sandkeep.health.status': result.status,
        'sandkeep.health.ok': result.status === 'passed' || result.status === 'repaired',
        'sandkeep.health.repaired': result.status === 'repaired',
        'sandkeep.health.required': result.required,
      },
      startTime: now - result.probeMs - (result.repairMs ?? 0),
    },
    scope.active(),
  )
  if (result.status === 'failed') {
    span.setAttribute('sandkeep.error.code', 'HEALTH_CHECK_FAILED')
    span.setStatus({ code: STATUS_ERROR, message: 'HEALTH_CHECK_FAILED' })
  }
  span.end(now)
}

/** The hooks when tracing is off: each runs its function as is. */
export const noopTurnTracer: TurnTracer = {
  turn: (_conversationId, _options, begin) => begin(),
  resume: (_turn, run) => run(),
  within: (_turn, run) => run(),
  phase: (_name, _attributes, run) => run(),
}

/** Whether beginTurn's options make a lazy turn (`lazy: true`, or a prewarm without `lazy: false`). */
function isLazy(options: unknown): boolean {
  const { lazy, prewarm } = (options ?? {}) as { lazy?: unknown; prewarm?: unknown }
  return lazy === true || (lazy === undefined && (prewarm === true || prewarm === 'auto'))
}
