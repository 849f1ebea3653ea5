// A local-e2b host and a session manager on the real Redis (random prefix and tenant, checkpoints on,
// pausing at turn end) for the integration tests of this package; ended and closed after the file's tests.
import { randomUUID } from 'node:crypto'
import { createSessionManager, type SessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterAll, beforeAll } from 'vitest'

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/** What {@link useSessions} gives a test file. */
export interface SessionsRig {
  readonly host: LocalE2BHost
  readonly sessions: SessionManager
  /** The Redis key prefix, for a second process on the same sessions. */
  readonly prefix: string
  readonly tenant: string
  /** A fresh thread id (= conversation id), ended after the file's tests. */
  newThread(): string
}

export function useSessions(tenantPrefix: string): SessionsRig {
  const prefix = `sklgtest:${randomUUID().slice(0, 12)}`
  const tenant = `${tenantPrefix}-${randomUUID().slice(0, 8)}`
  const threads: string[] = []
  let started: { host: LocalE2BHost; sessions: SessionManager } | undefined
  beforeAll(async () => {
    const host = await startLocalE2B({ logger: () => {} })
    const sessions = createSessionManager({
      store: createRedisSessionStore({ redis: REDIS_URL, prefix }),
      provider: createE2BProvider({
        apiKey: host.apiKey,
        apiUrl: host.apiUrl,
        sandboxUrl: host.sandboxUrl,
        snapshots: { keepsMemory: false },
      }),
      onTurnEnd: 'pause',
      checkpoints: { every: 'turn', keep: 50 },
    })
    started = { host, sessions }
  }, 120_000)
  afterAll(async () => {
    for (const thread of threads) await started?.sessions.endSession(thread, { tenant }).catch(() => {})
    await started?.sessions.close()
    await started?.host.close()
  }, 120_000)
  const rig = () => {
    if (!started) throw new Error('useSessions: the rig starts in beforeAll')
    return started
  }
  return {
    prefix,
    tenant,
    get host() {
      return rig().host
    },
    get sessions() {
      return rig().sessions
    },
    newThread() {
      const id = `thread-${randomUUID()}`
      threads.push(id)
      return id
    },
  }
}
