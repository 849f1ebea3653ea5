import type { TurnEndReport } from '../contract/report.js'
import type { SessionKey } from '../contract/validation.js'

// Tenants verified per sandbox id in this process; bounded so a long-lived server does not grow without end.
const CACHE_LIMIT = 10_000

/** What this process's last turn of a session left: the sandbox, the turn count its release returned, its action. */
export interface LastTurn {
  sandboxId: string
  /** -1 when the release found no record (the store lost it): no speculation can be confirmed then. */
  turnCount: number
  leftAs: TurnEndReport['action']
}

/** What this process remembers between turns. Per process, bounded, never shared. */
export interface SessionCaches {
  /** The tenant verified per sandbox id (metadata never changes, so a verified id is remembered). */
  readonly verifiedTenants: Map<string, string>
  /**
   * Per session, what this process's last turn left: the next turn of the same conversation connects to that
   * sandbox at the same time as it takes its lease (see speculation.ts).
   */
  readonly lastTurns: Map<string, LastTurn>
  /** Turns of each session live in this process (begun, not ended): an unused speculation is undone at 0. */
  readonly liveTurns: Map<string, number>
  /** Turns of this process waiting for another's creation of a session, by session (see creation-wait.ts). */
  readonly creationWaiters: Map<string, Set<() => void>>
  /** Turn ends of this process that hold a session while they pause its sandbox (see end-wait.ts). */
  readonly endHolds: Map<string, Set<Promise<void>>>
  /** Turn ends of this process under way, from their first step to their last (a rewind waits for them). */
  readonly endings: Map<string, Set<Promise<void>>>
}

export function createSessionCaches(): SessionCaches {
  return {
    verifiedTenants: new Map(),
    lastTurns: new Map(),
    liveTurns: new Map(),
    creationWaiters: new Map(),
    endHolds: new Map(),
    endings: new Map(),
  }
}

/** The key of a session in the per-process caches. */
export function sessionCacheKey(key: SessionKey): string {
  return `${key.tenant}\u0000${key.conversationId}`
}

/** Sets `key` in a per-process cache, first dropping the oldest entry once it holds CACHE_LIMIT. */
export function setBounded<K, V>(cache: Map<K, V>, key: K, value: V): void {
  if (!cache.has(key) && cache.size >= CACHE_LIMIT) {
    const oldest = cache.keys().next().value
    if (oldest !== undefined) cache.delete(oldest)
  }
  cache.set(key, value)
}

/** Records (or, with null, forgets) what this process's last turn of a session left. */
export function rememberLastTurn(caches: SessionCaches, key: SessionKey, value: LastTurn | null): void {
  const cacheKey = sessionCacheKey(key)
  caches.lastTurns.delete(cacheKey)
  if (value) setBounded(caches.lastTurns, cacheKey, value)
}

/** Counts a turn of a session in (+1, at begin) or out (-1, at end or a failed acquire). */
export function countLiveTurn(caches: SessionCaches, key: SessionKey, delta: 1 | -1): void {
  const cacheKey = sessionCacheKey(key)
  const count = (caches.liveTurns.get(cacheKey) ?? 0) + delta
  if (count > 0) caches.liveTurns.set(cacheKey, count)
  else caches.liveTurns.delete(cacheKey)
}

/** True while a turn of the session is live in this process. */
export function hasLiveTurn(caches: SessionCaches, key: SessionKey): boolean {
  return caches.liveTurns.has(sessionCacheKey(key))
}
