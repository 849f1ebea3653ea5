// The session managers of a replay: one per set of active health checks, built from the transcript's checks,
// with per-turn checkpoints when the transcript rewinds or forks.
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
import type { Transcript, TranscriptHealthCheck } from '../transcript.js'
import { DEMO_CHECKPOINTS } from './branches.js'

/**
 * One session manager per set of active health checks: a check declared `fromTurn: 4` (a server started in
 * turn 3) is only run from turn 4 on, so earlier turns do not report it as failing.
 */
export class ManagerCache {
  readonly #managers = new Map<string, SessionManager>()
  constructor(
    readonly store: SessionStore,
    readonly provider: SandboxProvider,
    readonly transcript: Pick<Transcript, 'healthChecks' | 'branches'>,
  ) {}

  forTurn(turn: number): SessionManager {
    const active = this.transcript.healthChecks.filter((check) => (check.fromTurn ?? 1) <= turn)
    const key = active.map((check) => check.name).join('\u0000')
    let manager = this.#managers.get(key)
    if (!manager) {
      manager = createSessionManager({
        store: this.store,
        provider: this.provider,
        onTurnEnd: 'pause',
        healthChecks: active.map(toHealthCheck),
        // Only a transcript that goes back needs them: a checkpoint costs a snapshot at every turn end.
        checkpoints: this.transcript.branches ? DEMO_CHECKPOINTS : false,
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
