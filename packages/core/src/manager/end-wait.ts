// A turn's end may hold the session while it pauses the sandbox (the release's `holdIfLast`): the reply
// went out before the pause, so the next message can arrive while the sandbox is still being paused, and
// that turn must not resume (or use) a sandbox that is half-paused. Here: the holds of this process's turn
// ends, and the next turn's wait for them or for another process's.
import { SandkeepError } from '../contract/errors.js'
import { sleep } from '../contract/retry.js'
import type { AcquireResult } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import { type SessionCaches, sessionCacheKey } from './caches.js'
import type { ManagerContext } from './context.js'

/** Marks a turn end of this process that holds `key`'s session; call the returned function once it let go. */
export function holdEnd(caches: SessionCaches, key: SessionKey): () => void {
  return track(caches.endHolds, sessionCacheKey(key))
}

/** Marks a turn end of this process under way; call the returned function once it is done. */
export function markEnding(caches: SessionCaches, key: SessionKey): () => void {
  return track(caches.endings, sessionCacheKey(key))
}

/** Waits until no turn end of this process is under way for `key` (bounded by `createWaitMs`). */
export function waitForEndings(
  ctx: ManagerContext,
  key: SessionKey,
  signal: AbortSignal | undefined,
): Promise<void> {
  return waitForSettled(ctx, ctx.caches.endings, key, signal, performance.now() + ctx.config.createWaitMs)
}

/** Adds a pending promise under `cacheKey`; the returned function settles and removes it. */
function track(map: Map<string, Set<Promise<void>>>, cacheKey: string): () => void {
  const { promise, resolve } = Promise.withResolvers<void>()
  const set = map.get(cacheKey) ?? new Set<Promise<void>>()
  set.add(promise)
  map.set(cacheKey, set)
  return () => {
    set.delete(promise)
    if (set.size === 0 && map.get(cacheKey) === set) map.delete(cacheKey)
    resolve()
  }
}

/**
 * Waits until no turn end of this process holds `key`'s session (none usually: then it returns at once), at
 * most until `deadline` (a `performance.now()` time, monotonic; default `createWaitMs` from now).
 * @throws SandkeepError SESSION_BUSY past the deadline; the signal's reason when it fires
 */
export function waitForLocalEnds(
  ctx: ManagerContext,
  key: SessionKey,
  signal: AbortSignal | undefined,
  deadline = performance.now() + ctx.config.createWaitMs,
): Promise<void> {
  return waitForSettled(ctx, ctx.caches.endHolds, key, signal, deadline)
}

/** Waits until `map` holds no pending promise for `key`, at most until `deadline`; the timer goes with it. */
async function waitForSettled(
  ctx: ManagerContext,
  map: Map<string, Set<Promise<void>>>,
  key: SessionKey,
  signal: AbortSignal | undefined,
  deadline: number,
): Promise<void> {
  for (;;) {
    const pending = map.get(sessionCacheKey(key))
    if (!pending || pending.size === 0) return
    const left = deadline - performance.now()
    if (left <= 0) throw stillHeld(key, ctx.config.createWaitMs)
    const stop = new AbortController()
    const stopped = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal
    await Promise.race([Promise.all(pending), sleep(left, stopped, 'resolve')])
    stop.abort()
    if (signal?.aborted) throw signal.reason
  }
}

/**
 * How long to wait before asking the store again after a SESSION_BUSY (`attempt` from 0): exponential from
 * 25 ms to 500 ms with jitter, no longer than the store's `retryAfterMs` or the `left` of the deadline.
 */
export function busyBackoffMs(attempt: number, retryAfterMs: number | undefined, left: number): number {
  const base = Math.min(25 * 2 ** attempt, 500)
  return Math.max(0, Math.min(base / 2 + Math.random() * base, retryAfterMs ?? base, left))
}

/**
 * Takes the lease after an acquire answered SESSION_BUSY (another turn's end holds the session): waits for
 * this process's holds, or polls the store with backoff and jitter for another process's, at most
 * `createWaitMs`.
 * @throws SandkeepError SESSION_BUSY when the hold outlasts `createWaitMs`; the signal's reason when it fires
 */
export async function acquireAfterHold(
  ctx: ManagerContext,
  key: SessionKey,
  options: { holderId: string; leaseMs: number; ttlMs: number },
  busy: SandkeepError,
  signal?: AbortSignal,
): Promise<AcquireResult> {
  const deadline = performance.now() + ctx.config.createWaitMs
  let last = busy
  for (let attempt = 0; ; attempt++) {
    if (performance.now() >= deadline) throw last
    if (ctx.caches.endHolds.has(sessionCacheKey(key))) {
      await waitForLocalEnds(ctx, key, signal, deadline)
    } else {
      // The hold ends when its pause returns: usually within seconds, never later than its lease.
      const wait = busyBackoffMs(attempt, last.retryAfterMs, deadline - performance.now())
      await sleep(wait, signal, 'reject')
    }
    try {
      return await ctx.store.acquire(key, options)
    } catch (error) {
      if (!SandkeepError.hasCode(error, 'SESSION_BUSY')) throw error
      last = error as SandkeepError
    }
  }
}

function stillHeld(key: SessionKey, waitedMs: number): SandkeepError {
  return new SandkeepError({
    code: 'SESSION_BUSY',
    message: `The previous turn of this conversation has been pausing its sandbox for over ${waitedMs} ms; try again shortly.`,
    tenant: key.tenant,
    conversationId: key.conversationId,
    retryable: true,
  })
}
