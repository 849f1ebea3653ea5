import { mergeAbortSignals } from '../contract/abort-signals.js'
import { SandkeepError } from '../contract/errors.js'
import type { TurnEndReport } from '../contract/report.js'
import { sleep } from '../contract/retry.js'
import type { AcquireResult, SessionRecord } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import { BUSY_RETRY, backoffMs, CREATION_POLL } from './backoff.js'

// Entries per cache (verified tenants, last turns); bounded so a long-lived server does not grow without end.
const CACHE_LIMIT = 10_000

/** What this process's last turn of a session left: the sandbox, the turn count its release returned, its action. */
export interface LastTurn {
  sandboxId: string
  /** -1 when the release found no record (the store lost it). */
  turnCount: number
  leftAs: TurnEndReport['action']
}

/** What a creation poll answers: the checked record, and whether this turn is the one to create. */
export interface CreationClaim {
  record: SessionRecord | null
  create: boolean
}

/** The bounds of a wait: at most `waitMs` (the manager's `createWaitMs`), and no longer than `signal`. */
export interface WaitLimits {
  waitMs: number
  signal?: AbortSignal | undefined
}

/**
 * What this process knows of its sessions between and during turns, and the only code that changes it: the
 * tenants verified per sandbox, what each session's last turn left, the turns live per session, the turns
 * waiting for another's creation, and the turn ends under way or holding a session while they pause. Per
 * process, bounded, never shared; the store calls a wait makes are passed in by its caller.
 */
export class SessionState {
  readonly #cacheLimit: number
  readonly #verifiedTenants = new Map<string, string>()
  readonly #lastTurns = new Map<string, LastTurn>()
  readonly #liveTurns = new Map<string, number>()
  readonly #creationWaiters = new Map<string, Set<() => void>>()
  readonly #endHolds = new Map<string, Set<Promise<void>>>()
  readonly #endings = new Map<string, Set<Promise<void>>>()

  /** `cacheLimit`: entries kept per cache before the oldest goes (default 10,000). */
  constructor(options: { cacheLimit?: number } = {}) {
    this.#cacheLimit = options.cacheLimit ?? CACHE_LIMIT
  }

  /** Remembers that `sandboxId` belongs to `tenant` (metadata never changes, so a verified id stays verified). */
  rememberTenant(sandboxId: string, tenant: string): void {
    this.#setBounded(this.#verifiedTenants, sandboxId, tenant)
  }

  /** True when this process already knows `sandboxId` belongs to `tenant`. */
  isVerified(sandboxId: string, tenant: string): boolean {
    return this.#verifiedTenants.get(sandboxId) === tenant
  }

  /** What this process's last turn of the session left (the next turn adopts it if the store lost the session). */
  lastTurn(key: SessionKey): LastTurn | undefined {
    return this.#lastTurns.get(sessionKeyOf(key))
  }

  /** Records (or, with null, forgets) what this process's last turn of a session left. */
  rememberLastTurn(key: SessionKey, value: LastTurn | null): void {
    const cacheKey = sessionKeyOf(key)
    this.#lastTurns.delete(cacheKey)
    if (value) this.#setBounded(this.#lastTurns, cacheKey, value)
  }

  /** Counts a turn of the session in: at begin, before the lease is asked for. */
  turnBegan(key: SessionKey): void {
    const cacheKey = sessionKeyOf(key)
    this.#liveTurns.set(cacheKey, (this.#liveTurns.get(cacheKey) ?? 0) + 1)
  }

  /** Counts a turn of the session out: at its release, or when its acquire failed. */
  turnEnded(key: SessionKey): void {
    const cacheKey = sessionKeyOf(key)
    const count = (this.#liveTurns.get(cacheKey) ?? 0) - 1
    if (count > 0) this.#liveTurns.set(cacheKey, count)
    else this.#liveTurns.delete(cacheKey)
  }

  /** True while a turn of the session is live in this process (begun, not ended). */
  hasLiveTurn(key: SessionKey): boolean {
    return this.#liveTurns.has(sessionKeyOf(key))
  }

  /** The turns live in this process, over all sessions. */
  openTurns(): number {
    let sum = 0
    for (const count of this.#liveTurns.values()) sum += count
    return sum
  }

  /** Marks a turn end that holds the session while it pauses the sandbox; call the result once it let go. */
  holdEnd(key: SessionKey): () => void {
    return track(this.#endHolds, sessionKeyOf(key))
  }

  /** Marks a turn end under way, from its first step to its last; call the result once it is done. */
  markEnding(key: SessionKey): () => void {
    return track(this.#endings, sessionKeyOf(key))
  }

  /** The turn ends under way or holding a session, over all sessions: each settles when it is done. */
  endsUnderWay(): Promise<void>[] {
    return [...this.#endings.values(), ...this.#endHolds.values()].flatMap((set) => [...set])
  }

  /**
   * Waits until no turn end of this process is under way for the session.
   * @throws SandkeepError SESSION_BUSY after `waitMs`; the signal's reason when it fires
   */
  waitForEndings(key: SessionKey, limits: WaitLimits): Promise<void> {
    return waitForSettled(this.#endings, key, limits, performance.now() + limits.waitMs)
  }

  /**
   * Waits until no turn end of this process holds the session (none usually: then it returns at once), at
   * most until `deadline` (a `performance.now()` time; default `waitMs` from now).
   * @throws SandkeepError SESSION_BUSY past the deadline; the signal's reason when it fires
   */
  waitForLocalEnds(
    key: SessionKey,
    limits: WaitLimits,
    deadline = performance.now() + limits.waitMs,
  ): Promise<void> {
    return waitForSettled(this.#endHolds, key, limits, deadline)
  }

  /**
   * Takes the lease with `acquire` after one answered `busy` (a turn end holds the session): waits for this
   * process's holds, or retries with the busy backoff for another process's, at most `waitMs`.
   * @throws SandkeepError SESSION_BUSY when the hold outlasts `waitMs`; the signal's reason when it fires
   */
  async acquireAfterHold(
    key: SessionKey,
    acquire: () => Promise<AcquireResult>,
    busy: SandkeepError,
    limits: WaitLimits,
  ): Promise<AcquireResult> {
    const deadline = performance.now() + limits.waitMs
    let last = busy
    for (let attempt = 0; ; attempt++) {
      if (performance.now() >= deadline) throw last
      if (this.#endHolds.has(sessionKeyOf(key))) {
        await this.waitForLocalEnds(key, limits, deadline)
      } else {
        // The hold ends when its pause returns: usually within seconds, never later than its lease.
        const leftMs = deadline - performance.now()
        await sleep(
          backoffMs(attempt, { ...BUSY_RETRY, retryAfterMs: last.retryAfterMs, leftMs }),
          limits.signal,
          'reject',
        )
      }
      try {
        return await acquire()
      } catch (error) {
        if (!SandkeepError.hasCode(error, 'SESSION_BUSY')) throw error
        last = error as SandkeepError
      }
    }
  }

  /** Wakes this process's waiters for the session's creation: a turn here mapped it, or ended. */
  wakeCreationWaiters(key: SessionKey): void {
    const cacheKey = sessionKeyOf(key)
    const waiters = this.#creationWaiters.get(cacheKey)
    this.#creationWaiters.delete(cacheKey)
    for (const wake of waiters ?? []) wake()
  }

  /**
   * Another turn is creating the session's sandbox: polls `claim` with the creation backoff until it says
   * this turn creates or returns a mapped record, at most `waitMs`. A turn of this process that maps the
   * session or ends cuts the pause short.
   * @throws SandkeepError SESSION_BUSY after `waitMs`; the signal's reason when it fires
   */
  async waitForCreation(
    key: SessionKey,
    claim: () => Promise<CreationClaim>,
    limits: WaitLimits,
  ): Promise<CreationClaim> {
    const deadline = performance.now() + limits.waitMs
    for (let attempt = 0; ; attempt++) {
      const answer = await claim()
      if (answer.create || answer.record?.sandboxId) return answer
      if (performance.now() >= deadline) throw creationBusy(key, limits.waitMs)
      const leftMs = Math.max(0, deadline - performance.now())
      await this.#creationPause(key, backoffMs(attempt, { ...CREATION_POLL, leftMs }), limits.signal)
    }
  }

  /** Sleeps `ms`, or less when a turn here wakes the session's creation waiters first. */
  async #creationPause(key: SessionKey, ms: number, signal: AbortSignal | undefined): Promise<void> {
    const cacheKey = sessionKeyOf(key)
    const waiters = this.#creationWaiters.get(cacheKey) ?? new Set<() => void>()
    this.#creationWaiters.set(cacheKey, waiters)
    const woken = Promise.withResolvers<void>()
    waiters.add(woken.resolve)
    const stop = new AbortController()
    try {
      const stopped = mergeAbortSignals(stop.signal, signal)
      await Promise.race([sleep(ms, stopped, 'reject'), woken.promise])
    } finally {
      stop.abort()
      waiters.delete(woken.resolve)
      if (waiters.size === 0 && this.#creationWaiters.get(cacheKey) === waiters)
        this.#creationWaiters.delete(cacheKey)
    }
  }

  /** Sets `key`, first dropping the oldest entry once the cache holds the limit. */
  #setBounded<V>(cache: Map<string, V>, key: string, value: V): void {
    if (!cache.has(key) && cache.size >= this.#cacheLimit) {
      const oldest = cache.keys().next().value
      if (oldest !== undefined) cache.delete(oldest)
    }
    cache.set(key, value)
  }
}

/** The key of a session in this process's maps. */
function sessionKeyOf(key: SessionKey): string {
  return `${key.tenant}\u0000${key.conversationId}`
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

/** Waits until `map` holds no pending promise for `key`, at most until `deadline`; the timer goes with it. */
async function waitForSettled(
  map: Map<string, Set<Promise<void>>>,
  key: SessionKey,
  limits: WaitLimits,
  deadline: number,
): Promise<void> {
  const { signal } = limits
  for (;;) {
    const pending = map.get(sessionKeyOf(key))
    if (!pending || pending.size === 0) return
    const left = deadline - performance.now()
    if (left <= 0) throw stillHeld(key, limits.waitMs)
    const stop = new AbortController()
    const stopped = mergeAbortSignals(stop.signal, signal)
    await Promise.race([Promise.all(pending), sleep(left, stopped, 'resolve')])
    stop.abort()
    if (signal?.aborted) throw signal.reason
  }
}

function creationBusy(key: SessionKey, waitedMs: number): SandkeepError {
  return new SandkeepError({
    code: 'SESSION_BUSY',
    message: `Another turn has been creating this conversation's sandbox for over ${waitedMs} ms; try again shortly.`,
    tenant: key.tenant,
    conversationId: key.conversationId,
    retryable: true,
  })
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
