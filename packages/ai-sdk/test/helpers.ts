// A local-e2b host and a session manager on it, shared by the integration tests of this package.
import { randomUUID } from 'node:crypto'
import {
  createMemorySessionStore,
  createSessionManager,
  type SessionManager,
  type SessionManagerOptions,
  type SessionStore,
} from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterAll, beforeAll } from 'vitest'

/** What {@link startLocalSessions} started. */
export interface LocalSessions {
  host: LocalE2BHost
  sessions: SessionManager
  store: SessionStore
}

/** Starts a quiet local-e2b host and a session manager on it (memory store unless `store` is given). */
export async function startLocalSessions(
  options: { store?: SessionStore } & Omit<Partial<SessionManagerOptions>, 'store' | 'provider'> = {},
): Promise<LocalSessions> {
  const { store = createMemorySessionStore(), ...managerOptions } = options
  const host = await startLocalE2B({ logger: () => {} })
  const sessions = createSessionManager({
    ...managerOptions,
    store,
    provider: createE2BProvider({
      apiKey: host.apiKey,
      apiUrl: host.apiUrl,
      sandboxUrl: host.sandboxUrl,
      snapshots: { keepsMemory: false },
    }),
  })
  return { host, sessions, store }
}

/** Ends the given conversations (errors ignored), then closes the store and the host. */
export async function stopLocalSessions(
  local: Partial<LocalSessions>,
  conversations: string[],
  tenant?: string,
): Promise<void> {
  for (const conversationId of conversations) {
    await local.sessions?.endSession(conversationId, tenant === undefined ? {} : { tenant }).catch(() => {})
  }
  await local.store?.close()
  await local.host?.close()
}

/** What {@link useRedisSessions} gives a test file: the rig (once started), and fresh conversations. */
export interface RedisSessionsRig extends LocalSessions {
  /** The Redis key prefix of the store, for a second store on the same sessions. */
  readonly prefix: string
  /** The tenant the file's conversations use. */
  readonly tenant: string
  /** A fresh conversation id, ended after the file's tests. */
  newConversation(): string
}

/**
 * Starts a local-e2b host and a manager on the real Redis (a random prefix, pausing at turn end) before the
 * file's tests, and ends the conversations it handed out, the store and the host after them.
 */
export function useRedisSessions(tenantPrefix: string): RedisSessionsRig {
  const prefix = `skaitest:${randomUUID().slice(0, 12)}`
  const tenant = `${tenantPrefix}-${randomUUID().slice(0, 8)}`
  const conversations: string[] = []
  let local: LocalSessions | undefined
  beforeAll(async () => {
    local = await startLocalSessions({ store: createRedisSessionStore({ prefix }), onTurnEnd: 'pause' })
  }, 120_000)
  afterAll(() => stopLocalSessions(local ?? {}, conversations, tenant), 120_000)
  const started = () => {
    if (!local) throw new Error('useRedisSessions: the rig starts in beforeAll')
    return local
  }
  return {
    prefix,
    tenant,
    get host() {
      return started().host
    },
    get sessions() {
      return started().sessions
    },
    get store() {
      return started().store
    },
    newConversation() {
      const id = `conv-${randomUUID()}`
      conversations.push(id)
      return id
    },
  }
}
