// The logger contract an app passes as `createSessionManager({ logger })`, apart from the code that writes
// to it, so the options' types and the log writer both import it and neither imports the other.

/** A log level, from the chattiest. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

/** Structured fields of one log line: ids, outcomes, counts and durations (ms); never a secret. */
export type LogFields = Record<string, string | number | boolean | null | undefined | string[]>

/**
 * Where the manager writes its log: pino, winston, bunyan and `console` fit as they are. A level the object
 * lacks is not written.
 */
export interface SandkeepLogger {
  debug?(message: string, fields?: LogFields): void
  info?(message: string, fields?: LogFields): void
  warn?(message: string, fields?: LogFields): void
  error?(message: string, fields?: LogFields): void
}
