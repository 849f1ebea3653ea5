import { randomUUID } from 'node:crypto'
import { createMockProvider, type MockProvider, type MockProviderOptions } from '@sandkeep/testing'
import type { SessionManagerEvents, SessionManagerOptions } from '../contract/session-manager-types.js'
import type { SessionStore } from '../contract/session-store.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { createSessionManager } from './session-manager.js'

// Fixtures shared by the manager's unit tests (manager/*.test.ts): a manager over the memory store and the
// mock provider, with fast retries, and a recorder of its events.

export function setup(
  options: Partial<SessionManagerOptions> = {},
  providerOptions: MockProviderOptions = {},
): {
  provider: MockProvider
  store: SessionStore
  sessions: ReturnType<typeof createSessionManager>
  id: string
} {
  const provider = createMockProvider(providerOptions)
  const store = createMemorySessionStore()
  const sessions = createSessionManager({
    store,
    provider,
    retry: { retries: 4, minTimeoutMs: 1, maxTimeoutMs: 5 },
    ...options,
  })
  return { provider, store, sessions, id: `conv-${randomUUID()}` }
}

export function record<E extends keyof SessionManagerEvents>(
  sessions: ReturnType<typeof createSessionManager>,
  event: E,
): SessionManagerEvents[E][] {
  const seen: SessionManagerEvents[E][] = []
  sessions.on(event, (payload) => seen.push(payload))
  return seen
}

/** The store and provider of a setup, to build a second manager over them. */
export function setupOptions(made: ReturnType<typeof setup>): SessionManagerOptions {
  return { store: made.store, provider: made.provider }
}
