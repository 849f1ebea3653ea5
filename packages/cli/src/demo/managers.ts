// The session managers of a replay: one per set of active health checks, built from the transcript's checks.
import {
  codeCheck,
  createSessionManager,
  fileCheck,
  type HealthCheck,
  portCheck,
  processCheck,
  type SandboxProvider,
  type SessionManager,
  type SessionStore,
} from '@sandkeep/core'
import type { TranscriptHealthCheck } from '../transcript.js'

/**
 * One session manager per set of active health checks: a check declared `fromTurn: 4` (a server started in
 * turn 3) is only run from turn 4 on, so earlier turns do not report it as failing.
 */
export class ManagerCache {
  readonly #managers = new Map<string, SessionManager>()
  constructor(
    readonly store: SessionStore,
    readonly provider: SandboxProvider,
    readonly checks: TranscriptHealthCheck[],
  ) {}

  forTurn(turn: number): SessionManager {
    const active = this.checks.filter((check) => (check.fromTurn ?? 1) <= turn)
    const key = active.map((check) => check.name).join('\u0000')
    let manager = this.#managers.get(key)
    if (!manager) {
      manager = createSessionManager({
        store: this.store,
        provider: this.provider,
        onTurnEnd: 'pause',
        healthChecks: active.map(toHealthCheck),
      })
      this.#managers.set(key, manager)
    }
    return manager
  }
}

/**
 * Turns a transcript's JSON check into `@sandkeep/core`'s check value. The transcript schema is strict and
 * mirrors core's check options, so the fields pass through as they are; only `fromTurn` is the demo's own.
 */
function toHealthCheck(check: TranscriptHealthCheck): HealthCheck {
  switch (check.kind) {
    case 'process':
      return processCheck(withoutFromTurn(check))
    case 'port':
      return portCheck(withoutFromTurn(check))
    case 'code':
      return codeCheck(withoutFromTurn(check))
    case 'file':
      return fileCheck(withoutFromTurn(check))
  }
}

function withoutFromTurn<T extends { fromTurn?: number | undefined; kind: string }>(
  check: T,
): Omit<T, 'fromTurn' | 'kind'> {
  const { fromTurn: _fromTurn, kind: _kind, ...options } = check
  return options
}
