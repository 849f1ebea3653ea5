// The manager's log: one subscriber to its events that writes the turn lifecycle (begin, resume outcome,
// repairs, replays, end, pause, errors) to a logger the app passes. Fields are picked one by one from the
// events, never copied wholesale, so nothing the events carry beyond ids, outcomes and timings (an error's
// cause, a record's manifest, an option) reaches the log.
import { SandkeepError } from '../contract/errors.js'
import type { LogFields, LogLevel } from '../contract/logger-types.js'
import type { SessionManagerEvents } from '../contract/session-manager-types.js'
import type { EventHub } from './events.js'

/** The manager's `logger` option as it resolved: where to write and from which level. */
export interface ResolvedLogger {
  write(level: LogLevel, message: string, fields: LogFields): void
}

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error']

/**
 * The logger of the `logger` and `debug` options: the app's logger; with `debug: true` and none given,
 * `console` from level debug; else null (silent, the default).
 * @throws SandkeepError INVALID_ARGUMENT when `logger` is not an object of functions, or `debug` not a boolean
 */
export function resolveLogger(logger: unknown, debug: unknown): ResolvedLogger | null {
  if (debug !== undefined && typeof debug !== 'boolean') {
    throw new SandkeepError({ code: 'INVALID_ARGUMENT', message: 'options.debug must be a boolean.' })
  }
  if (logger === undefined) return debug ? consoleLogger() : null
  if (typeof logger !== 'object' || logger === null) {
    throw new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message:
        'options.logger must be an object with debug/info/warn/error methods (console, a pino logger).',
    })
  }
  const target = logger as Record<string, unknown>
  const methods = LEVELS.filter((level) => typeof target[level] === 'function')
  if (methods.length === 0) {
    throw new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message: 'options.logger has none of the methods debug, info, warn, error.',
    })
  }
  return {
    write(level, message, fields) {
      const method = target[level]
      if (typeof method !== 'function') return
      try {
        method.call(logger, message, fields)
      } catch {
        // A logger that throws must not fail a turn.
      }
    },
  }
}

function consoleLogger(): ResolvedLogger {
  return {
    write(level, message, fields) {
      console[level](`[sandkeep] ${message}`, fields)
    },
  }
}

/** What the log says of an error: its code and message (sandkeep's messages never hold a secret). */
export function errorFields(error: unknown): LogFields {
  if (SandkeepError.isInstance(error)) return { errorCode: error.code, error: error.message }
  if (error instanceof Error) return { error: `${error.name}: ${error.message}` }
  return { error: String(error) }
}

/** Subscribes the logger to the manager's events; returns the unsubscribe function. */
export function logManagerEvents(
  logger: ResolvedLogger,
  on: EventHub<SessionManagerEvents>['on'],
): () => void {
  const offs = [
    on('turn-start', (event) =>
      logger.write('debug', 'turn begin', {
        tenant: event.tenant,
        conversationId: event.conversationId,
        lazy: event.lazy,
        prewarm: event.prewarm,
      }),
    ),
    on('resume-end', ({ report }) =>
      logger.write(report.stateLost ? 'warn' : 'info', `resume ${report.outcome}`, {
        tenant: report.tenant,
        conversationId: report.conversationId,
        sandboxId: report.sandboxId,
        outcome: report.outcome,
        stateLost: report.stateLost,
        memory: report.survived.memory,
        filesystem: report.survived.filesystem,
        processes: report.survived.processes,
        retries: report.retries,
        rehydratedSteps: report.rehydratedSteps,
        totalMs: Math.round(report.timings.totalMs),
      }),
    ),
    on('health-check', (event) => {
      if (event.result.status === 'passed' || event.result.status === 'skipped') return
      logger.write(event.result.status === 'repaired' ? 'info' : 'warn', `check ${event.result.status}`, {
        tenant: event.tenant,
        conversationId: event.conversationId,
        sandboxId: event.sandboxId,
        check: event.result.name,
        kind: event.result.kind,
        required: event.result.required,
        detail: event.result.message,
      })
    }),
    on('rehydrate', (event) =>
      logger.write(event.failed > 0 ? 'warn' : 'info', 'journal replayed', {
        tenant: event.tenant,
        conversationId: event.conversationId,
        sandboxId: event.sandboxId,
        reason: event.reason,
        steps: event.steps,
        failed: event.failed,
        ms: Math.round(event.ms),
      }),
    ),
    on('turn-end', ({ conversationId, tenant, report, end }) =>
      logger.write(end.error ? 'warn' : 'info', 'turn end', {
        tenant,
        conversationId,
        sandboxId: report?.sandboxId,
        action: end.action,
        last: end.last,
        checkpointTurn: end.checkpoint?.turn,
        errorCode: end.error?.code,
        error: end.error?.message,
        workMs: Math.round(end.timings.workMs),
      }),
    ),
    on('pause-end', (event) =>
      logger.write('info', `sandbox ${event.action}`, {
        tenant: event.tenant,
        conversationId: event.conversationId,
        sandboxId: event.sandboxId,
        action: event.action,
        ms: Math.round(event.ms),
      }),
    ),
    on('session-lost', (event) =>
      logger.write('warn', 'session missing from the store', {
        tenant: event.tenant,
        conversationId: event.conversationId,
        sandboxId: event.sandboxId,
        adopted: event.adopted,
      }),
    ),
    on('error', (event) =>
      logger.write('warn', `error in ${event.phase}`, {
        tenant: event.tenant,
        conversationId: event.conversationId,
        phase: event.phase,
        ...errorFields(event.error),
      }),
    ),
  ]
  return () => {
    for (const off of offs) off()
  }
}
