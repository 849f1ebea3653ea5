import { SandkeepError } from '../contract/errors.js'
import { sleep } from '../contract/retry.js'
import type { SessionRecord } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import { type SessionCaches, sessionCacheKey } from './caches.js'
import { checkRecord } from './records.js'
import type { TurnScope } from './scope.js'

/** Wakes this process's waiters of a session: a turn here mapped it, or ended (which drops its claim). */
export function wakeCreationWaiters(caches: SessionCaches, key: SessionKey): void {
  const cacheKey = sessionCacheKey(key)
  const waiters = caches.creationWaiters.get(cacheKey)
  caches.creationWaiters.delete(cacheKey)
  for (const wake of waiters ?? []) wake()
}

/** Sleeps `ms` before the next creation poll, or less when a turn here wakes the waiters first. */
async function creationPause(
  caches: SessionCaches,
  key: SessionKey,
  ms: number,
  signal: AbortSignal,
): Promise<void> {
  const cacheKey = sessionCacheKey(key)
  const waiters = caches.creationWaiters.get(cacheKey) ?? new Set<() => void>()
  caches.creationWaiters.set(cacheKey, waiters)
  let wake = () => {}
  const woken = new Promise<void>((resolve) => {
    wake = resolve
  })
  waiters.add(wake)
  const stop = new AbortController()
  try {
    await Promise.race([sleep(ms, AbortSignal.any([signal, stop.signal]), 'reject'), woken])
  } finally {
    stop.abort()
    waiters.delete(wake)
    if (waiters.size === 0 && caches.creationWaiters.get(cacheKey) === waiters)
      caches.creationWaiters.delete(cacheKey)
  }
}

/**
 * Another turn holds the creation claim of a session with no sandbox yet: polls `claimCreation` until that
 * turn mapped one or its claim lapsed (then this turn creates), at most `createWaitMs`. The lease is read
 * at each poll (renewals replace it).
 * @throws SandkeepError SESSION_BUSY after `createWaitMs`; the signal's reason when it fires
 */
export async function waitForCreation(
  scope: TurnScope,
): Promise<{ record: SessionRecord | null; create: boolean }> {
  const { ctx, key, lease, signal } = scope
  const { createWaitMs } = ctx.config
  const deadline = performance.now() + createWaitMs
  for (let attempt = 0; ; attempt++) {
    const claim = await ctx.store.claimCreation(key, lease())
    const record = checkRecord(claim.record, key)
    if (claim.create || record?.sandboxId) return { record, create: claim.create }
    if (performance.now() >= deadline) {
      throw new SandkeepError({
        code: 'SESSION_BUSY',
        message: `Another turn has been creating this conversation's sandbox for over ${createWaitMs} ms; try again shortly.`,
        tenant: key.tenant,
        conversationId: key.conversationId,
        retryable: true,
      })
    }
    // Exponential backoff with jitter, capped, so many waiters do not poll the store in step; a turn of
    // this process that maps the session or ends wakes its waiters at once.
    const base = Math.min(25 * 2 ** attempt, 1000)
    await creationPause(
      ctx.caches,
      key,
      Math.min(base / 2 + Math.random() * base, Math.max(0, deadline - performance.now())),
      signal,
    )
  }
}
