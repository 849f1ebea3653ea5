// What every store conformance area shares: the settings and options types, the context an area runs in
// (the runner's functions, a store factory whose stores are closed after each test) and small helpers.
import { AsyncLocalStorage } from 'node:async_hooks'
import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { SandkeepError, type SandkeepErrorCode, type SessionKey } from '@sandkeep/core'
import type { Lease, SessionRecord, SessionStore, TurnManifest } from '@sandkeep/core/store'
import type { ConformanceExpect, StoreConformanceTestApi } from '../test-api.js'

/** Store settings the conformance suite asks for; every store factory should honour them. */
export interface SessionStoreConformanceSettings {
  /** Session TTL, ms; `undefined` = the store's default. The TTL tests pass about a second. */
  ttlMs?: number
  /** Journal step cap; `undefined` = the store's default. */
  maxJournalSteps?: number
  /** Journal byte cap; `undefined` = the store's default. */
  maxJournalBytes?: number
}

/** Makes a fresh store for one test; the suite closes it after the test. */
export type MakeSessionStore = (
  settings: SessionStoreConformanceSettings,
) => SessionStore | Promise<SessionStore>

/** Optional hooks of the store conformance suite for what only the backend can do. */
export interface StoreConformanceOptions {
  /**
   * Damages the stored record of `key` (which exists) behind the store's back. Returns the location the
   * STORE_CORRUPT message must name (e.g. the Redis key) and a check that the damage is still there as left.
   * When given, the suite checks that every method refuses the corrupt record and leaves it untouched.
   */
  corruptRecord?: (
    store: SessionStore,
    key: SessionKey,
  ) => Promise<{ location: string; isUntouched: () => Promise<boolean> }>
  /**
   * Writes `value` as field `field` of the stored record of `key` (which exists) behind the store's back, as
   * the backend keeps it (Redis: the field's text, `String(value)`; memory: the value itself). Returns the
   * location the STORE_CORRUPT message must name and a check that the whole session (record and lease)
   * is still exactly as the damage left it. When given, the suite checks that every method that reads the
   * record refuses each damaged value the contract forbids (a sandbox id with a newline, a negative or
   * fractional turn count, ...) before writing anything.
   */
  corruptField?: (
    store: SessionStore,
    key: SessionKey,
    field: CorruptibleRecordField,
    value: string | number,
  ) => Promise<{ location: string; isUntouched: () => Promise<boolean> }>
  /**
   * Whether the store has the optional branching methods (`readCheckpoints`, `rewind`, `createFork`):
   * `true` fails the branching area's tests for a store without them, `false` skips them; default: run them
   * when the store has the methods.
   */
  branching?: boolean
  /**
   * Damages the stored checkpoints of `key` (which has at least two, of turns 1 and 2) behind the store's
   * back: the first one's turn, time or journal length becomes a value no store writes. Returns the location
   * the STORE_CORRUPT message must name and a check that the session (record, lease, journal, checkpoints)
   * is still exactly as the damage left it. When given, the suite checks that `readCheckpoints`, `rewind`
   * and a `release` recording a checkpoint refuse it before writing anything.
   */
  corruptCheckpoints?: (
    store: SessionStore,
    key: SessionKey,
  ) => Promise<{ location: string; isUntouched: () => Promise<boolean> }>
  /**
   * Stretches the short lease (300 ms) and the wait for it to lapse (900 ms) by this factor, for a backend
   * whose calls are slow enough to outlive a 300 ms lease (an emulated Lua engine, a loaded CI box).
   * Default 1.
   */
  leaseScale?: number
}

/** The record fields whose damaged values the corruption area writes through `corruptField`. */
export type CorruptibleRecordField =
  | 'sandboxId'
  | 'providerId'
  | 'template'
  | 'turnCount'
  | 'mappingToken'
  | 'runningSeconds'
  | 'pausedSeconds'
  | 'pausedAt'
  | 'lastTurnStartedAt'
  | 'restore'

/** What one conformance area runs with; made by {@link createStoreConformanceContext}. */
export interface StoreConformanceContext {
  /** The test runner's functions. */
  api: StoreConformanceTestApi
  /** The backend hooks. */
  options: StoreConformanceOptions
  /** The lease lengths this run uses (ms): {@link LEASE}, the short ones stretched by `leaseScale`. */
  leases: { long: number; short: number; lapseWait: number }
  /** Opens a fresh store; it is closed after the test (after each attempt of it, see `withinLease`). */
  open(settings?: SessionStoreConformanceSettings): Promise<SessionStore>
  /**
   * Runs `calls`, the calls a test makes while a lease of `leaseMs` (default the short one) must still be
   * live, the first of them the acquire. When they took `leaseMs` or longer, measured from before the
   * acquire, the lease may have lapsed on the machine's slowness rather than the store's fault: the
   * attempt is dropped (its stores closed) and the whole test runs again on fresh keys, up to
   * {@link LEASE_ATTEMPTS} times. Calls that fail inside the lease fail the test.
   */
  withinLease<T>(calls: () => Promise<T>, leaseMs?: number): Promise<T>
  /** Expects `promise` to reject with a SandkeepError of `code`, and returns that error. */
  expectCode(promise: Promise<unknown>, code: SandkeepErrorCode): Promise<SandkeepError>
  /** Acquires and creates the sandbox mapping; returns the lease and the record. */
  createSession(
    store: SessionStore,
    key: SessionKey,
    sandboxId?: string,
  ): Promise<{ lease: Lease; record: SessionRecord }>
}

/** What an area's tests get: the runner's functions and the context's helpers, in one object. */
export type AreaTools = StoreConformanceTestApi & Omit<StoreConformanceContext, 'api'>

/** Makes an area: a function of the context that registers `body`'s tests under `describe(title)`. */
export function defineArea(
  title: string,
  body: (tools: AreaTools) => void,
): (context: StoreConformanceContext) => void {
  return (context) => context.api.describe(title, () => body({ ...context.api, ...context }))
}

/** Lease lengths, ms: one no test outlives, one that lapses, and a wait long enough for it to lapse. */
export const LEASE = { long: 60_000, short: 300, lapseWait: 900 } as const

/** How many times a test runs when its calls keep outliving the lease they needed (see `withinLease`). */
export const LEASE_ATTEMPTS = 5

/** An attempt's calls outlived the lease they needed: the machine's speed, so the test runs again. */
class LeaseOutlived extends Error {
  override name = 'LeaseOutlived'
}

/** The stores one attempt of one test opened, so that tests running side by side close only their own. */
const attempts = new AsyncLocalStorage<SessionStore[]>()

const closeAll = (stores: SessionStore[]) =>
  Promise.allSettled(stores.splice(0).map((store) => store.close()))

async function withinLease<T>(calls: () => Promise<T>, leaseMs: number): Promise<T> {
  const started = performance.now()
  let outcome: { value: T } | { error: unknown }
  try {
    outcome = { value: await calls() }
  } catch (error) {
    outcome = { error }
  }
  const took = performance.now() - started
  if (took >= leaseMs) {
    throw new LeaseOutlived(
      `calls that needed a live ${leaseMs} ms lease took ${Math.round(took)} ms on ${LEASE_ATTEMPTS} ` +
        'attempts: this machine is slower than the lease allows; raise the leaseScale option',
    )
  }
  if ('error' in outcome) throw outcome.error
  return outcome.value
}

/** `test` that runs each body in its own store scope, again (bounded) when its calls outlived a lease. */
function attemptingTest(test: StoreConformanceTestApi['test']): StoreConformanceTestApi['test'] {
  return (name, body) =>
    test(name, async () => {
      for (let attempt = 1; ; attempt += 1) {
        const stores: SessionStore[] = []
        try {
          await attempts.run(stores, body)
          return
        } catch (error) {
          if (!(error instanceof LeaseOutlived) || attempt >= LEASE_ATTEMPTS) throw error
        } finally {
          await closeAll(stores)
        }
      }
    })
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A random tenant: every test uses its own, so stores may share one backend. */
export const tenant = () => `t-${randomUUID().slice(0, 8)}`

export const newKey = (conversationId = `conv-${randomUUID()}`, ofTenant = tenant()): SessionKey => ({
  tenant: ofTenant,
  conversationId,
})

export const holder = () => `h-${randomUUID()}`

/** setSandbox's input that maps `sandboxId` in place of `expectedSandboxId` (null: first creation). */
export const mapping = (sandboxId: string, expectedSandboxId: string | null = null, providerId = 'p') => ({
  sandboxId,
  expectedSandboxId,
  providerId,
})

export function manifestFor(sandboxId: string, value = 'v1'): TurnManifest {
  return {
    writtenAt: Date.now(),
    sandboxId,
    memory: [{ language: 'python', contextId: null, variable: '__sandkeep_sentinel', value }],
    filesystem: { path: '/tmp/.sandkeep-marker', value },
    processes: [],
  }
}

async function expectCode(
  expect: ConformanceExpect,
  promise: Promise<unknown>,
  code: SandkeepErrorCode,
): Promise<SandkeepError> {
  let caught: unknown
  try {
    await promise
  } catch (error) {
    caught = error
  }
  expect(caught, `expected SandkeepError ${code}`).toBeDefined()
  expect(SandkeepError.isInstance(caught), `expected SandkeepError ${code}, got ${String(caught)}`).toBe(true)
  expect((caught as SandkeepError).code).toBe(code)
  return caught as SandkeepError
}

/**
 * Makes the context the areas run in and registers the `afterEach` hook that closes the stores a test
 * opened. Call it inside your `describe` (or at the top level of a test file), then call the areas with it.
 */
export function createStoreConformanceContext(
  api: StoreConformanceTestApi,
  makeStore: MakeSessionStore,
  options: StoreConformanceOptions = {},
): StoreConformanceContext {
  // Stores opened outside a test body (none of the areas does) are closed after each test.
  const opened: SessionStore[] = []
  api.afterEach(async () => {
    await closeAll(opened)
  })
  const open = async (settings: SessionStoreConformanceSettings = {}) => {
    const store = await makeStore(settings)
    ;(attempts.getStore() ?? opened).push(store)
    return store
  }
  const createSession = async (store: SessionStore, key: SessionKey, sandboxId = `sbx-${randomUUID()}`) => {
    const acquired = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
    api.expect(acquired.create).toBe(true)
    const record = await store.setSandbox(key, acquired.lease, {
      ...mapping(sandboxId, null, 'test-provider'),
      template: 'base',
    })
    return { lease: acquired.lease, record }
  }
  const scale = options.leaseScale ?? 1
  const short = LEASE.short * scale
  return {
    api: { ...api, test: attemptingTest(api.test) },
    options,
    leases: { long: LEASE.long, short, lapseWait: LEASE.lapseWait * scale },
    open,
    withinLease: (calls, leaseMs = short) => withinLease(calls, leaseMs),
    createSession,
    expectCode: (promise, code) => expectCode(api.expect, promise, code),
  }
}
