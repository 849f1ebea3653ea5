// A local-e2b host and a session manager on the real Redis, shared by this package's integration tests.
import { randomUUID } from 'node:crypto'
import { createSessionManager, type SessionManager, type SessionManagerOptions } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterAll, beforeAll } from 'vitest'

/** What {@link useRig} gives a test file. */
export interface Rig {
  readonly host: LocalE2BHost
  readonly sessions: SessionManager
  /** The tenant of the file's threads. */
  readonly tenant: string
  /** A fresh thread id, whose session is ended after the file's tests. */
  newThread(): string
  /** Another manager on the same host and Redis prefix, as a second process would have (closed after the file). */
  newManager(): SessionManager
  /** The platform's state of a sandbox ('running', 'paused'), asked of the host. */
  stateOf(sandboxId: string | undefined): string | undefined
}

/** A host and a manager (Redis store with a random prefix, pause at turn end, checkpoints) for one file. */
export function useRig(name: string, options: Partial<SessionManagerOptions> = {}): Rig {
  const prefix = `skmastratest:${randomUUID().slice(0, 12)}`
  const tenant = `${name}-${randomUUID().slice(0, 8)}`
  const threads: string[] = []
  let started: { host: LocalE2BHost; sessions: SessionManager } | undefined
  const extra: SessionManager[] = []
  const managerOn = (host: LocalE2BHost) =>
    createSessionManager({
      store: createRedisSessionStore({ prefix }),
      provider: createE2BProvider({
        apiKey: host.apiKey,
        apiUrl: host.apiUrl,
        sandboxUrl: host.sandboxUrl,
        snapshots: { keepsMemory: false },
      }),
      onTurnEnd: 'pause',
      checkpoints: { every: 'turn', keep: 10 },
      ...options,
    })
  beforeAll(async () => {
    const host = await startLocalE2B({ logger: () => {} })
    started = { host, sessions: managerOn(host) }
  }, 120_000)
  afterAll(async () => {
    if (!started) return
    for (const thread of threads) await started.sessions.endSession(thread, { tenant }).catch(() => {})
    for (const manager of extra) await manager.close()
    await started.sessions.close()
    await started.host.close()
  }, 120_000)
  const rig = () => {
    if (!started) throw new Error('useRig: the rig starts in beforeAll')
    return started
  }
  return {
    tenant,
    get host() {
      return rig().host
    },
    get sessions() {
      return rig().sessions
    },
    newManager() {
      const manager = managerOn(rig().host)
      extra.push(manager)
      return manager
    },
    newThread() {
      const id = `thread-${randomUUID()}`
      threads.push(id)
      return id
    },
    stateOf(sandboxId) {
      return sandboxId === undefined ? undefined : rig().host.getSandbox(sandboxId)?.state
    },
  }
}
