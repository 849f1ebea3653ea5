// The host's log: warnings always, each sandbox's lifecycle at `info`, every request at `debug`. A line names
// ids, ports, statuses, durations and a few known words (template, reason, mode); never an API key, a token,
// a header value, a query string (signed URLs carry their signature there) or the path of a request to a
// sandbox's own server (an app's path is the app's data).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { HostEvent, HostEventLog } from './events.js'
import type { LocalE2BLogLevel } from './options.js'

const RANK: Record<LocalE2BLogLevel, number> = { warn: 0, info: 1, debug: 2 }

/** Host events that are a sandbox's or the host's lifecycle, logged at `info`. */
const LIFECYCLE = new Set([
  'host-start',
  'host-close',
  'host-restart',
  'sandbox-create',
  'sandbox-connect',
  'sandbox-pause',
  'sandbox-resume',
  'sandbox-kill',
  'sandbox-timeout',
  'sandbox-expire',
  'sandbox-set-timeout',
  'sandbox-fork',
  'snapshot-create',
  'snapshot-restore',
  'snapshot-delete',
  'edge-refuse',
])

/** Host events that say something went wrong, logged at `warn`. */
const PROBLEMS = new Set(['host-error', 'sandbox-timeout-fail', 'process-restart-fail'])

/** Detail fields whose string values are words of the host's own (never user input or secrets). */
const WORD_FIELDS = new Set([
  'templateId',
  'reason',
  'mode',
  'action',
  'kind',
  'snapshotId',
  'isolation',
  'freezer',
  'path',
])

/** A detail value as shown: numbers rounded, booleans, known words; anything else left out. */
function shown(key: string, value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value))
    return String(Number.isInteger(value) ? value : Math.round(value))
  if (typeof value === 'boolean') return String(value)
  if (typeof value === 'string' && WORD_FIELDS.has(key) && /^[\w./:@-]{1,128}$/.test(value)) return value
  return undefined
}

export class HostLog {
  readonly #write: (line: string, level: LocalE2BLogLevel) => void
  readonly #rank: number

  constructor(write: (line: string, level: LocalE2BLogLevel) => void, level: LocalE2BLogLevel) {
    this.#write = write
    this.#rank = RANK[level]
  }

  /** True when lines of `level` are written. */
  enabled(level: LocalE2BLogLevel): boolean {
    return RANK[level] <= this.#rank
  }

  log(level: LocalE2BLogLevel, message: string): void {
    if (this.enabled(level)) this.#write(`[sandkeep-local-e2b] ${message}`, level)
  }

  /** Logs the lifecycle events (`info`) and the problems (`warn`) the host records from now on. */
  watch(events: HostEventLog): void {
    if (!this.enabled('warn')) return
    events.on('event', (event: HostEvent) => {
      const level = PROBLEMS.has(event.type) ? 'warn' : LIFECYCLE.has(event.type) ? 'info' : undefined
      if (level === undefined || !this.enabled(level)) return
      const fields = Object.entries(event.detail)
        .map(([key, value]) => {
          const text = shown(key, value)
          return text === undefined ? undefined : `${key}=${text}`
        })
        .filter((field) => field !== undefined)
      const subject = event.sandboxId ? ` ${event.sandboxId}` : ''
      this.log(level, `${event.type}${subject}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}`)
    })
  }

  /**
   * Logs a request once its response is done (`debug`): method, what it was for, status and ms. `target` is
   * the sandbox port it went to, when it went to one.
   */
  request(
    request: IncomingMessage,
    response: ServerResponse,
    target: () => { sandboxId: string; port: number; userPort: boolean } | undefined,
  ): void {
    if (!this.enabled('debug')) return
    const started = performance.now()
    response.once('close', () => {
      const ms = Math.round(performance.now() - started)
      const status = response.headersSent ? response.statusCode : 0
      this.log('debug', `${request.method ?? '?'} ${described(request, target())} ${status} ${ms}ms`)
    })
  }

  /** Logs an upgrade request (`debug`) with how it ended. */
  upgrade(target: { sandboxId: string; port: number } | undefined, outcome: string): void {
    if (!this.enabled('debug')) return
    const what = target ? `port ${target.port} of ${target.sandboxId}` : 'the host'
    this.log('debug', `upgrade to ${what}: ${outcome}`)
  }
}

/** What a request was for, without its query string, and without the path of a sandbox's own server. */
function described(
  request: IncomingMessage,
  target: { sandboxId: string; port: number; userPort: boolean } | undefined,
): string {
  if (target?.userPort) return `port ${target.port} of ${target.sandboxId}`
  const path = (request.url ?? '/').split('?')[0] ?? '/'
  // Printable ASCII only and bounded: a path is the client's text.
  const clean = path.replace(/[^\x21-\x7e]/g, '?').slice(0, 200)
  return target ? `${clean} (port ${target.port} of ${target.sandboxId})` : clean
}
