// A local-e2b host and a session manager on it, shared by the integration tests of this package.
import {
  createMemorySessionStore,
  createSessionManager,
  type SessionManager,
  type SessionManagerOptions,
  type SessionStore,
} from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'

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
    provider: createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }),
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
