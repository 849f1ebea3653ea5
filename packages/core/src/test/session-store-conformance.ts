import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { SandkeepError, type SandkeepErrorCode } from '../errors.js'
import type { JournalStep } from '../journal.js'
import type { Lease, SessionRecord, SessionStore, TurnManifest } from '../session-store.js'
import type { SessionKey } from '../validation.js'

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

/** Optional hooks of {@link sessionStoreConformance} for what only the backend can do. */
export interface SessionStoreConformanceOptions {
  /**
   * Damages the stored record of `key` (which exists) behind the store's back. Returns the location the
   * STORE_CORRUPT message must name (e.g. the Redis key) and a check that the damage is still there as left.
   * When given, the suite checks that every method refuses the corrupt record and leaves it untouched.
   */
  corruptRecord?: (
    store: SessionStore,
    key: SessionKey,
  ) => Promise<{ location: string; isUntouched: () => Promise<boolean> }>
}

const LONG_LEASE_MS = 60_000
const SHORT_LEASE_MS = 300
const LAPSE_WAIT_MS = 900

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function manifestFor(sandboxId: string, value = 'v1'): TurnManifest {
  return {
    writtenAt: Date.now(),
    sandboxId,
    memory: [{ language: 'python', contextId: null, variable: '__sandkeep_sentinel', value }],
    filesystem: { path: '/tmp/.sandkeep-marker', value },
    processes: [],
  }
}

async function expectCode(promise: Promise<unknown>, code: SandkeepErrorCode): Promise<SandkeepError> {
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
 * Registers vitest tests that check a {@link SessionStore} against the v1 contract: leases, fencing,
 * single-flight creation, compare-and-set, tenants, hostile ids, listing, journal, delete, TTL and input
 * validation. Call it at the top level of a test file with a factory that makes a fresh store:
 *
 * ```ts
 * sessionStoreConformance('memory', (settings) => createMemorySessionStore(settings))
 * ```
 *
 * Every test uses its own random tenant, so stores may share one backend. Needs `vitest` (an optional peer).
 */
export function sessionStoreConformance(
  name: string,
  makeStore: MakeSessionStore,
  options: SessionStoreConformanceOptions = {},
): void {
  describe(`SessionStore conformance: ${name}`, () => {
    const opened: SessionStore[] = []

    afterEach(async () => {
      const stores = opened.splice(0)
      await Promise.allSettled(stores.map((store) => store.close()))
    })

    const open = async (settings: SessionStoreConformanceSettings = {}) => {
      const store = await makeStore(settings)
      opened.push(store)
      return store
    }
    const tenant = () => `t-${randomUUID().slice(0, 8)}`
    const newKey = (conversationId = `conv-${randomUUID()}`, ofTenant = tenant()): SessionKey => ({
      tenant: ofTenant,
      conversationId,
    })
    const holder = () => `h-${randomUUID()}`

    /** Acquires and creates the sandbox mapping; returns the lease and the record. */
    const createSession = async (store: SessionStore, key: SessionKey, sandboxId = `sbx-${randomUUID()}`) => {
      const acquired = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
      expect(acquired.create).toBe(true)
      const record = await store.setSandbox(key, acquired.lease, {
        sandboxId,
        expectedSandboxId: null,
        providerId: 'test-provider',
        template: 'base',
      })
      return { lease: acquired.lease, record }
    }

    it('describes itself as a v1 store', async () => {
      const store = await open()
      expect(store.specificationVersion).toBe('v1')
      expect(typeof store.storeId).toBe('string')
      expect(store.storeId.length).toBeGreaterThan(0)
    })

    describe('acquire', () => {
      it('grants the creation claim on a new session and returns no record', async () => {
        const store = await open()
        const key = newKey()
        const before = Date.now()
        const result = await store.acquire(key, { holderId: 'h1', leaseMs: LONG_LEASE_MS })
        expect(result.record).toBeNull()
        expect(result.create).toBe(true)
        expect(result.holders).toBe(1)
        expect(result.lease.holderId).toBe('h1')
        expect(result.lease.fencingToken).toBeGreaterThanOrEqual(1)
        // The store clock may differ from ours a little; the lease runs about leaseMs from now.
        expect(result.lease.expiresAt).toBeGreaterThan(before + LONG_LEASE_MS - 5_000)
        expect(result.lease.expiresAt).toBeLessThan(Date.now() + LONG_LEASE_MS + 5_000)
        expect(await store.get(key)).toBeNull()
      })

      it('lets overlapping holders share a session, each with a higher fencing token', async () => {
        const store = await open()
        const key = newKey()
        const first = await store.acquire(key, { holderId: 'h1', leaseMs: LONG_LEASE_MS })
        const second = await store.acquire(key, { holderId: 'h2', leaseMs: LONG_LEASE_MS })
        expect(second.create).toBe(false)
        expect(second.holders).toBe(2)
        expect(second.lease.fencingToken).toBeGreaterThan(first.lease.fencingToken)
        const third = await store.acquire(key, { holderId: 'h3', leaseMs: LONG_LEASE_MS })
        expect(third.holders).toBe(3)
        expect(third.lease.fencingToken).toBeGreaterThan(second.lease.fencingToken)
      })

      it('returns the mapped record to later turns and records when the turn started', async () => {
        const store = await open()
        const key = newKey()
        const { lease, record: created } = await createSession(store, key, 'sbx-1')
        await store.release(key, lease, { turnEndedAt: Date.now() })
        const next = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        expect(next.create).toBe(false)
        expect(next.record?.sandboxId).toBe('sbx-1')
        expect(next.record?.conversationId).toBe(key.conversationId)
        expect(next.record?.lastTurnStartedAt).toBeGreaterThanOrEqual(created.lastTurnStartedAt ?? 0)
        expect(next.lease.fencingToken).toBeGreaterThan(lease.fencingToken)
      })
    })

    describe('setSandbox', () => {
      it('creates the record on first creation with every contract field', async () => {
        const store = await open()
        const key = newKey()
        const acquired = await store.acquire(key, { holderId: 'creator', leaseMs: LONG_LEASE_MS })
        const record = await store.setSandbox(key, acquired.lease, {
          sandboxId: 'sbx-first',
          expectedSandboxId: null,
          providerId: 'test-provider',
          template: 'code-interpreter-v1',
        })
        const expected: Partial<SessionRecord> = {
          schemaVersion: 1,
          tenant: key.tenant,
          conversationId: key.conversationId,
          sandboxId: 'sbx-first',
          providerId: 'test-provider',
          template: 'code-interpreter-v1',
          lastTurnEndedAt: null,
          turnCount: 0,
          runningSeconds: 0,
          pausedSeconds: 0,
          state: 'running',
          pausedAt: null,
          mappingToken: acquired.lease.fencingToken,
          manifest: null,
        }
        expect(record).toMatchObject(expected)
        expect(typeof record.createdAt).toBe('number')
        expect(record.updatedAt).toBeGreaterThanOrEqual(record.createdAt)
        expect(typeof record.lastTurnStartedAt).toBe('number')
        expect(await store.get(key)).toEqual(record)
      })

      it('refuses a compare-and-set whose expected id is not the stored one', async () => {
        const store = await open()
        const key = newKey()
        const { lease } = await createSession(store, key, 'sbx-a')
        await expectCode(
          store.setSandbox(key, lease, { sandboxId: 'sbx-b', expectedSandboxId: null, providerId: 'p' }),
          'LEASE_LOST',
        )
        await expectCode(
          store.setSandbox(key, lease, { sandboxId: 'sbx-b', expectedSandboxId: 'sbx-x', providerId: 'p' }),
          'LEASE_LOST',
        )
        expect((await store.get(key))?.sandboxId).toBe('sbx-a')
        const remapped = await store.setSandbox(key, lease, {
          sandboxId: 'sbx-b',
          expectedSandboxId: 'sbx-a',
          providerId: 'p',
        })
        expect(remapped.sandboxId).toBe('sbx-b')
        expect(remapped.template).toBe('base')
        expect((await store.get(key))?.sandboxId).toBe('sbx-b')
      })

      it('fences the mapping: a holder with an older token cannot overwrite a newer mapping', async () => {
        const store = await open()
        const key = newKey()
        const { lease: first } = await createSession(store, key, 'sbx-1')
        const second = await store.acquire(key, { holderId: 'newer', leaseMs: LONG_LEASE_MS })
        expect(second.lease.fencingToken).toBeGreaterThan(first.fencingToken)
        // The newer holder recreates the sandbox...
        const recreated = await store.setSandbox(key, second.lease, {
          sandboxId: 'sbx-2',
          expectedSandboxId: 'sbx-1',
          providerId: 'p',
        })
        expect(recreated.mappingToken).toBe(second.lease.fencingToken)
        // ...so the older holder, even knowing the current id, is refused.
        await expectCode(
          store.setSandbox(key, first, { sandboxId: 'sbx-3', expectedSandboxId: 'sbx-2', providerId: 'p' }),
          'LEASE_LOST',
        )
        expect((await store.get(key))?.sandboxId).toBe('sbx-2')
        // A holder arriving later gets a token above the mapping token and may write.
        const third = await store.acquire(key, { holderId: 'newest', leaseMs: LONG_LEASE_MS })
        expect(third.lease.fencingToken).toBeGreaterThan(recreated.mappingToken)
        const again = await store.setSandbox(key, third.lease, {
          sandboxId: 'sbx-4',
          expectedSandboxId: 'sbx-2',
          providerId: 'p',
        })
        expect(again.sandboxId).toBe('sbx-4')
      })

      it('refuses a write from a lapsed lease or a forged token', async () => {
        const store = await open()
        const key = newKey()
        const acquired = await store.acquire(key, { holderId: 'slow', leaseMs: SHORT_LEASE_MS })
        const forged: Lease = { ...acquired.lease, fencingToken: acquired.lease.fencingToken + 100 }
        await expectCode(
          store.setSandbox(key, forged, { sandboxId: 'sbx-f', expectedSandboxId: null, providerId: 'p' }),
          'LEASE_LOST',
        )
        await sleep(LAPSE_WAIT_MS)
        await expectCode(
          store.setSandbox(key, acquired.lease, {
            sandboxId: 'sbx-1',
            expectedSandboxId: null,
            providerId: 'p',
          }),
          'LEASE_LOST',
        )
        expect(await store.get(key)).toBeNull()
      })
    })

    describe('renew', () => {
      it('extends a live lease and refuses a lapsed or unknown one', async () => {
        const store = await open()
        const key = newKey()
        const acquired = await store.acquire(key, { holderId: 'h', leaseMs: 5_000 })
        const renewed = await store.renew(key, acquired.lease, { leaseMs: LONG_LEASE_MS })
        expect(renewed.holderId).toBe('h')
        expect(renewed.fencingToken).toBe(acquired.lease.fencingToken)
        expect(renewed.expiresAt).toBeGreaterThan(acquired.lease.expiresAt)
        await expectCode(
          store.renew(key, { ...acquired.lease, holderId: 'someone-else' }, { leaseMs: 1000 }),
          'LEASE_LOST',
        )
        await expectCode(store.renew(newKey(), acquired.lease, { leaseMs: 1000 }), 'LEASE_LOST')

        const short = await store.acquire(key, { holderId: 'short', leaseMs: SHORT_LEASE_MS })
        await sleep(LAPSE_WAIT_MS)
        await expectCode(store.renew(key, short.lease, { leaseMs: LONG_LEASE_MS }), 'LEASE_LOST')
      })

      it('keeps a renewed holder counted past its first expiry', async () => {
        const store = await open()
        const key = newKey()
        const a = await store.acquire(key, { holderId: 'a', leaseMs: 600 })
        await store.renew(key, a.lease, { leaseMs: LONG_LEASE_MS })
        await sleep(LAPSE_WAIT_MS)
        const b = await store.acquire(key, { holderId: 'b', leaseMs: LONG_LEASE_MS })
        expect(b.holders).toBe(2)
      })
    })

    describe('release', () => {
      it('tells only the last live holder that it is last, and applies stateIfLast only for it', async () => {
        const store = await open()
        const key = newKey()
        const { lease: a } = await createSession(store, key, 'sbx-1')
        const b = await store.acquire(key, { holderId: 'b', leaseMs: LONG_LEASE_MS })
        const first = await store.release(key, a, {
          turnEndedAt: Date.now(),
          runningSeconds: 2.5,
          stateIfLast: 'paused',
        })
        expect(first.last).toBe(false)
        expect(first.record?.state).toBe('running')
        expect(first.record?.pausedAt).toBeNull()
        expect(first.record?.turnCount).toBe(1)
        const second = await store.release(key, b.lease, {
          turnEndedAt: Date.now(),
          runningSeconds: 1.5,
          pausedSeconds: 10,
          stateIfLast: 'paused',
        })
        expect(second.last).toBe(true)
        expect(second.record?.state).toBe('paused')
        expect(typeof second.record?.pausedAt).toBe('number')
        expect(second.record?.turnCount).toBe(2)
        expect(second.record?.runningSeconds).toBeCloseTo(4, 6)
        expect(second.record?.pausedSeconds).toBeCloseTo(10, 6)
        expect(second.record?.lastTurnEndedAt).toBeGreaterThan(0)
        expect(await store.get(key)).toEqual(second.record)
      })

      it('writes, keeps and clears the manifest, and never writes one for another sandbox', async () => {
        const store = await open()
        const key = newKey()
        const { lease } = await createSession(store, key, 'sbx-1')
        const manifest = manifestFor('sbx-1', 'one')
        const written = await store.release(key, lease, { turnEndedAt: Date.now(), manifest })
        expect(written.record?.manifest).toEqual(manifest)

        const kept = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        expect(kept.record?.manifest).toEqual(manifest)
        const keptRelease = await store.release(key, kept.lease, { turnEndedAt: Date.now() })
        expect(keptRelease.record?.manifest).toEqual(manifest)

        const stale = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const staleRelease = await store.release(key, stale.lease, {
          turnEndedAt: Date.now(),
          manifest: manifestFor('sbx-other', 'two'),
        })
        expect(staleRelease.record?.manifest).toEqual(manifest)

        const clearing = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const cleared = await store.release(key, clearing.lease, { turnEndedAt: Date.now(), manifest: null })
        expect(cleared.record?.manifest).toBeNull()
        expect((await store.get(key))?.manifest).toBeNull()
      })

      it('writes a manifest conditional on the turn count only while no other turn ended since', async () => {
        const store = await open()
        const key = newKey()
        const { lease } = await createSession(store, key, 'sbx-1')
        const first = manifestFor('sbx-1', 'one')
        await store.release(key, lease, { turnEndedAt: Date.now(), manifest: first })

        // A and B overlap; B began after A and ends first, so A's start-of-turn view is stale by A's end.
        const a = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const b = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        expect(a.record?.turnCount).toBe(1)
        const fromB = manifestFor('sbx-1', 'b')
        const bEnd = await store.release(key, b.lease, {
          turnEndedAt: Date.now(),
          manifest: fromB,
          manifestIfTurnCount: b.record!.turnCount,
        })
        expect(bEnd.record?.manifest).toEqual(fromB)
        const aEnd = await store.release(key, a.lease, {
          turnEndedAt: Date.now(),
          manifest: manifestFor('sbx-1', 'a'),
          manifestIfTurnCount: a.record!.turnCount,
        })
        // The rest of A's release still happened.
        expect(aEnd.last).toBe(true)
        expect(aEnd.record?.turnCount).toBe(3)
        expect(aEnd.record?.manifest).toEqual(fromB)
        expect((await store.get(key))?.manifest).toEqual(fromB)

        // Alone, the condition holds and the manifest is written.
        const c = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const fromC = manifestFor('sbx-1', 'c')
        const cEnd = await store.release(key, c.lease, {
          turnEndedAt: Date.now(),
          manifest: fromC,
          manifestIfTurnCount: 3,
        })
        expect(cEnd.record?.manifest).toEqual(fromC)
        // Clearing is never conditional.
        const d = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const dEnd = await store.release(key, d.lease, {
          turnEndedAt: Date.now(),
          manifest: null,
          manifestIfTurnCount: 0,
        })
        expect(dEnd.record?.manifest).toBeNull()
      })

      it('counts the running time of overlapping turns once, from the first start to the last end', async () => {
        const store = await open()
        const key = newKey()
        const { lease } = await createSession(store, key, 'sbx-1')
        await store.release(key, lease, { turnEndedAt: 2_000, runningFrom: 1_000 })
        expect((await store.get(key))?.runningSeconds).toBeCloseTo(1, 6)

        // A runs 10–20 s, B 15–30 s (A ends first and leaves the sandbox running for B): 20 s, not 25.
        const a = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const b = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const aEnd = await store.release(key, a.lease, { turnEndedAt: 20_000, runningFrom: 10_000 })
        expect(aEnd.last).toBe(false)
        expect(aEnd.record?.runningSeconds).toBeCloseTo(1, 6)
        const bEnd = await store.release(key, b.lease, { turnEndedAt: 30_000, runningFrom: 15_000 })
        expect(bEnd.last).toBe(true)
        expect(bEnd.record?.runningSeconds).toBeCloseTo(21, 6)

        // C runs 40–60 s and D, inside it, 45–50 s (D ends first); a turn that never ran the sandbox (E)
        // ends last and pauses it: counted up to E's end, 40–65 s.
        const c = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const d = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const e = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        await store.release(key, d.lease, { turnEndedAt: 50_000, runningFrom: 45_000 })
        await store.release(key, c.lease, { turnEndedAt: 60_000, runningFrom: 40_000 })
        const eEnd = await store.release(key, e.lease, { turnEndedAt: 65_000 })
        expect(eEnd.last).toBe(true)
        expect(eEnd.record?.runningSeconds).toBeCloseTo(46, 6)

        // A run whose last holder died never counts; the next run starts afresh.
        const f = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const dies = await store.acquire(key, { holderId: 'dies', leaseMs: SHORT_LEASE_MS })
        expect(dies.holders).toBe(2)
        expect((await store.release(key, f.lease, { turnEndedAt: 70_000, runningFrom: 66_000 })).last).toBe(
          false,
        )
        await sleep(LAPSE_WAIT_MS)
        const g = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        expect(g.holders).toBe(1)
        const gEnd = await store.release(key, g.lease, { turnEndedAt: 90_000, runningFrom: 80_000 })
        expect(gEnd.record?.runningSeconds).toBeCloseTo(56, 6)
        // runningSeconds given as is still adds up.
        const h = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
        const hEnd = await store.release(key, h.lease, { turnEndedAt: 91_000, runningSeconds: 0.5 })
        expect(hEnd.record?.runningSeconds).toBeCloseTo(56.5, 6)
      })

      it('counts a dead holder only until its lease lapses', async () => {
        const store = await open()
        const key = newKey()
        const { lease: live } = await createSession(store, key, 'sbx-1')
        const dead = await store.acquire(key, { holderId: 'dies', leaseMs: SHORT_LEASE_MS })
        expect(dead.holders).toBe(2)
        await sleep(LAPSE_WAIT_MS)
        const probe = await store.acquire(key, { holderId: 'probe', leaseMs: LONG_LEASE_MS })
        expect(probe.holders).toBe(2)
        expect((await store.release(key, probe.lease, { turnEndedAt: Date.now() })).last).toBe(false)
        const end = await store.release(key, live, { turnEndedAt: Date.now(), stateIfLast: 'paused' })
        expect(end.last).toBe(true)
        expect(end.record?.state).toBe('paused')
      })

      it('still records a turn released after its lease lapsed', async () => {
        const store = await open()
        const key = newKey()
        const { lease: creator } = await createSession(store, key)
        await store.release(key, creator, { turnEndedAt: Date.now() })
        const slow = await store.acquire(key, { holderId: 'slow', leaseMs: SHORT_LEASE_MS })
        await sleep(LAPSE_WAIT_MS)
        const result = await store.release(key, slow.lease, { turnEndedAt: Date.now(), runningSeconds: 1 })
        expect(result.last).toBe(true)
        expect(result.record?.turnCount).toBe(2)
      })

      it('reports a session deleted meanwhile as a null record', async () => {
        const store = await open()
        const key = newKey()
        const { lease } = await createSession(store, key)
        expect(await store.delete(key)).toBe(true)
        const result = await store.release(key, lease, { turnEndedAt: Date.now() })
        expect(result.record).toBeNull()
        expect(result.last).toBe(true)
        expect(await store.get(key)).toBeNull()
      })
    })

    describe('single-flight creation', () => {
      it('gives exactly one of 100 concurrent holders the creation, and all see one mapping', async () => {
        const store = await open()
        const key = newKey()
        const results = await Promise.all(
          Array.from({ length: 100 }, (_, index) =>
            store.acquire(key, { holderId: `holder-${index}`, leaseMs: LONG_LEASE_MS }),
          ),
        )
        const creators = results.filter((result) => result.create)
        expect(creators).toHaveLength(1)
        const tokens = new Set(results.map((result) => result.lease.fencingToken))
        expect(tokens.size).toBe(100)
        expect(Math.max(...results.map((result) => result.holders))).toBe(100)

        const creator = creators[0]!
        const waiters = results.filter((result) => !result.create)
        // Waiters poll while the creator works; none of them may be handed the claim.
        const polls = await Promise.all(waiters.slice(0, 20).map((w) => store.claimCreation(key, w.lease)))
        expect(polls.every((poll) => !poll.create && poll.record === null)).toBe(true)

        await store.setSandbox(key, creator.lease, {
          sandboxId: 'sbx-only',
          expectedSandboxId: null,
          providerId: 'p',
        })
        const seen = await Promise.all(waiters.map((w) => store.claimCreation(key, w.lease)))
        expect(seen.every((poll) => !poll.create && poll.record?.sandboxId === 'sbx-only')).toBe(true)

        // A waiter that tries to create anyway is refused: the compare-and-set sees the mapping.
        await expectCode(
          store.setSandbox(key, waiters[0]!.lease, {
            sandboxId: 'sbx-dup',
            expectedSandboxId: null,
            providerId: 'p',
          }),
          'LEASE_LOST',
        )
        const releases = await Promise.all(
          results.map((result) => store.release(key, result.lease, { turnEndedAt: Date.now() })),
        )
        expect(releases.filter((release) => release.last)).toHaveLength(1)
        const record = await store.get(key)
        expect(record?.sandboxId).toBe('sbx-only')
        expect(record?.turnCount).toBe(100)
      })

      it('hands the claim to a waiter when the creator lapses, and refuses the dead creator', async () => {
        const store = await open()
        const key = newKey()
        const creator = await store.acquire(key, { holderId: 'creator', leaseMs: SHORT_LEASE_MS })
        const waiter = await store.acquire(key, { holderId: 'waiter', leaseMs: LONG_LEASE_MS })
        expect(creator.create).toBe(true)
        expect(waiter.create).toBe(false)
        expect((await store.claimCreation(key, waiter.lease)).create).toBe(false)
        await sleep(LAPSE_WAIT_MS)
        const claim = await store.claimCreation(key, waiter.lease)
        expect(claim).toEqual({ record: null, create: true })
        // Polling again keeps the claim with the same holder.
        expect((await store.claimCreation(key, waiter.lease)).create).toBe(true)
        await expectCode(store.claimCreation(key, creator.lease), 'LEASE_LOST')
        await expectCode(
          store.setSandbox(key, creator.lease, {
            sandboxId: 'sbx-late',
            expectedSandboxId: null,
            providerId: 'p',
          }),
          'LEASE_LOST',
        )
        const record = await store.setSandbox(key, waiter.lease, {
          sandboxId: 'sbx-waiter',
          expectedSandboxId: null,
          providerId: 'p',
        })
        expect(record.sandboxId).toBe('sbx-waiter')
        const late = await store.acquire(key, { holderId: 'late', leaseMs: LONG_LEASE_MS })
        expect(late.create).toBe(false)
        expect(late.record?.sandboxId).toBe('sbx-waiter')
      })

      it('frees the claim when the creator releases without creating', async () => {
        const store = await open()
        const key = newKey()
        const creator = await store.acquire(key, { holderId: 'creator', leaseMs: LONG_LEASE_MS })
        const waiter = await store.acquire(key, { holderId: 'waiter', leaseMs: LONG_LEASE_MS })
        expect(creator.create).toBe(true)
        const released = await store.release(key, creator.lease, { turnEndedAt: Date.now() })
        expect(released).toEqual({ last: false, record: null })
        expect((await store.claimCreation(key, waiter.lease)).create).toBe(true)
      })

      it('grants the claim again to a new holder after the creator lapsed', async () => {
        const store = await open()
        const key = newKey()
        await store.acquire(key, { holderId: 'creator', leaseMs: SHORT_LEASE_MS })
        const blocked = await store.acquire(key, { holderId: 'early', leaseMs: SHORT_LEASE_MS })
        expect(blocked.create).toBe(false)
        await sleep(LAPSE_WAIT_MS)
        const next = await store.acquire(key, { holderId: 'next', leaseMs: LONG_LEASE_MS })
        expect(next.create).toBe(true)
        expect(next.holders).toBe(1)
      })
    })

    describe('setState', () => {
      it('records pauses and resumes, and returns null for an unknown session', async () => {
        const store = await open()
        const key = newKey()
        expect(await store.setState(key, 'paused')).toBeNull()
        expect(await store.get(key)).toBeNull()
        await createSession(store, key)
        const paused = await store.setState(key, 'paused', { at: 1_700_000_000_000 })
        expect(paused?.state).toBe('paused')
        expect(paused?.pausedAt).toBe(1_700_000_000_000)
        const running = await store.setState(key, 'running')
        expect(running?.state).toBe('running')
        expect(running?.pausedAt).toBeNull()
        expect((await store.get(key))?.state).toBe('running')
        const killed = await store.setState(key, 'killed')
        expect(killed?.state).toBe('killed')
      })
    })

    describe('keys', () => {
      it('keeps the same conversation id under two tenants as two sessions', async () => {
        const store = await open()
        const conversationId = `shared-${randomUUID()}`
        const one = newKey(conversationId)
        const two = newKey(conversationId)
        await createSession(store, one, 'sbx-one')
        const second = await store.acquire(two, { holderId: 'h', leaseMs: LONG_LEASE_MS })
        expect(second.create).toBe(true)
        expect(second.record).toBeNull()
        await store.setSandbox(two, second.lease, {
          sandboxId: 'sbx-two',
          expectedSandboxId: null,
          providerId: 'p',
        })
        expect((await store.get(one))?.sandboxId).toBe('sbx-one')
        expect((await store.get(two))?.sandboxId).toBe('sbx-two')
        expect((await store.get(two))?.tenant).toBe(two.tenant)
        await store.appendJournal(one, { kind: 'command', command: 'echo one' })
        expect(await store.readJournal(two)).toEqual([])
        expect(await store.delete(one)).toBe(true)
        expect((await store.get(two))?.sandboxId).toBe('sbx-two')
        expect((await store.list(one.tenant)).sessions).toEqual([])
        expect((await store.list(two.tenant)).sessions.map((r) => r.sandboxId)).toEqual(['sbx-two'])
      })

      it('stores and finds hostile conversation ids exactly', async () => {
        const store = await open()
        const sharedTenant = tenant()
        const long = '会話🧪'.repeat(64).slice(0, 160)
        const hostile = [
          'a:b',
          '{x}',
          '*',
          '{x}:lease',
          'a:b:*:{',
          '?[abc]\\',
          '"quoted" \'single\'',
          long,
          `${'é'.repeat(255)}x`, // 511 bytes
          '🦊'.repeat(128), // 512 bytes exactly
        ]
        expect(new TextEncoder().encode(hostile.at(-1)!).byteLength).toBe(512)
        for (const [index, conversationId] of hostile.entries()) {
          const key = newKey(conversationId, sharedTenant)
          await createSession(store, key, `sbx-${index}`)
          await store.appendJournal(key, { kind: 'code', code: `x = ${index}` })
        }
        for (const [index, conversationId] of hostile.entries()) {
          const key = newKey(conversationId, sharedTenant)
          const record = await store.get(key)
          expect(record?.conversationId).toBe(conversationId)
          expect(record?.sandboxId).toBe(`sbx-${index}`)
          expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([
            { kind: 'code', code: `x = ${index}` },
          ])
        }
        // Near-misses are other sessions.
        expect(await store.get(newKey('a:b ', sharedTenant))).toBeNull()
        expect(await store.get(newKey('{x', sharedTenant))).toBeNull()
        const listed = await store.list(sharedTenant, { limit: 1000 })
        expect(listed.sessions.map((r) => r.conversationId).sort()).toEqual([...hostile].sort())
        await expectCode(store.get(newKey('🦊'.repeat(128) + 'x', sharedTenant)), 'INVALID_ARGUMENT')
      })
    })

    describe('list', () => {
      it('lists a tenant’s sessions most recently active first, paged without gaps or repeats', async () => {
        const store = await open()
        const listTenant = tenant()
        const base = Date.now() + 60_000
        const ids = ['s0', 's1', 's2', 's3', 's4']
        for (const id of ids) {
          const { lease } = await createSession(store, newKey(id, listTenant), `sbx-${id}`)
          await store.release(newKey(id, listTenant), lease, { turnEndedAt: base })
        }
        // A later turn on s1, then on s3: they become the most recent.
        for (const [offset, id] of [
          [1_000, 's1'],
          [2_000, 's3'],
        ] as const) {
          const key = newKey(id, listTenant)
          const acquired = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
          await store.release(key, acquired.lease, { turnEndedAt: base + offset })
        }
        // Sessions in another tenant stay out.
        await createSession(store, newKey('s9'))

        const all = await store.list(listTenant)
        expect(all.cursor).toBeUndefined()
        expect(all.sessions.map((r) => r.conversationId).slice(0, 2)).toEqual(['s3', 's1'])
        expect(all.sessions.map((r) => r.conversationId).sort()).toEqual(ids)

        const seen: string[] = []
        let cursor: string | undefined
        let pages = 0
        do {
          const page = await store.list(listTenant, { limit: 2, cursor })
          expect(page.sessions.length).toBeLessThanOrEqual(2)
          seen.push(...page.sessions.map((r) => r.conversationId))
          cursor = page.cursor
          pages += 1
        } while (cursor !== undefined && pages < 10)
        expect(pages).toBe(3)
        expect(seen).toEqual(all.sessions.map((r) => r.conversationId))

        expect(await store.list(tenant())).toEqual({ sessions: [] })
      })

      it('does not list a session that has no sandbox yet, or one deleted', async () => {
        const store = await open()
        const listTenant = tenant()
        const pending = await store.acquire(newKey('pending', listTenant), {
          holderId: 'h',
          leaseMs: LONG_LEASE_MS,
        })
        await store.release(newKey('pending', listTenant), pending.lease, { turnEndedAt: Date.now() })
        await createSession(store, newKey('kept', listTenant))
        await createSession(store, newKey('gone', listTenant))
        await store.delete(newKey('gone', listTenant))
        const page = await store.list(listTenant)
        expect(page.sessions.map((r) => r.conversationId)).toEqual(['kept'])
      })
    })

    describe('journal', () => {
      it('keeps steps in recording order with their time', async () => {
        const store = await open()
        const key = newKey()
        const steps: JournalStep[] = [
          { kind: 'command', command: 'pip install pandas', cwd: '/home/user' },
          { kind: 'code', code: 'import pandas as pd', language: 'python' },
          { kind: 'file', path: '/home/user/data.csv', content: 'a,b\n1,2\n' },
          { kind: 'file', path: '/home/user/empty', content: '' },
          { kind: 'code', code: 'let x = 1' },
        ]
        const before = Date.now()
        for (const step of steps) await store.appendJournal(key, step)
        const entries = await store.readJournal(key)
        expect(entries.map((entry) => entry.step)).toEqual(steps)
        for (const entry of entries) {
          expect(entry.recordedAt).toBeGreaterThan(before - 5_000)
          expect(entry.recordedAt).toBeLessThan(Date.now() + 5_000)
        }
        await store.clearJournal(key)
        expect(await store.readJournal(key)).toEqual([])
        await store.appendJournal(key, steps[0]!)
        expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([steps[0]])
      })

      it('refuses a step past the count limit and does not store it', async () => {
        const store = await open({ maxJournalSteps: 3 })
        const key = newKey()
        for (let index = 0; index < 3; index += 1) {
          await store.appendJournal(key, { kind: 'command', command: `echo ${index}` })
        }
        const error = await expectCode(
          store.appendJournal(key, { kind: 'command', command: 'echo 3' }),
          'JOURNAL_FULL',
        )
        expect(error.message).toMatch(/journal/i)
        expect(
          (await store.readJournal(key)).map((entry) => (entry.step as { command: string }).command),
        ).toEqual(['echo 0', 'echo 1', 'echo 2'])
        await store.clearJournal(key)
        await store.appendJournal(key, { kind: 'command', command: 'echo again' })
        expect(await store.readJournal(key)).toHaveLength(1)
      })

      it('refuses a step past the byte limit and does not store it', async () => {
        const store = await open({ maxJournalBytes: 2_000 })
        const key = newKey()
        await store.appendJournal(key, { kind: 'file', path: '/home/user/a', content: 'x'.repeat(800) })
        await store.appendJournal(key, { kind: 'file', path: '/home/user/b', content: 'é'.repeat(400) })
        await expectCode(
          store.appendJournal(key, { kind: 'file', path: '/home/user/c', content: 'y'.repeat(300) }),
          'JOURNAL_FULL',
        )
        // A small step still fits under the byte limit.
        await store.appendJournal(key, { kind: 'command', command: 'ls' })
        expect((await store.readJournal(key)).map((entry) => entry.step.kind)).toEqual([
          'file',
          'file',
          'command',
        ])
        await expectCode(
          store.appendJournal(newKey(), { kind: 'file', path: '/home/user/big', content: 'z'.repeat(3_000) }),
          'JOURNAL_FULL',
        )
      })
    })

    describe('delete', () => {
      it('removes the record, its leases and its journal', async () => {
        const store = await open()
        const key = newKey()
        const { lease } = await createSession(store, key)
        await store.appendJournal(key, { kind: 'command', command: 'echo hi' })
        expect(await store.delete(key)).toBe(true)
        expect(await store.get(key)).toBeNull()
        expect(await store.readJournal(key)).toEqual([])
        await expectCode(store.renew(key, lease, { leaseMs: 1000 }), 'LEASE_LOST')
        expect(await store.delete(key)).toBe(false)
        const fresh = await store.acquire(key, { holderId: 'h', leaseMs: LONG_LEASE_MS })
        expect(fresh.create).toBe(true)
        expect(fresh.holders).toBe(1)
        expect(fresh.record).toBeNull()
      })

      it('answers false for a session that never existed', async () => {
        const store = await open()
        expect(await store.delete(newKey())).toBe(false)
      })
    })

    describe('ttl', () => {
      it('forgets a session idle past ttlMs', async () => {
        const store = await open({ ttlMs: 500 })
        const key = newKey()
        const { lease } = await createSession(store, key)
        await store.appendJournal(key, { kind: 'command', command: 'echo hi' })
        await store.release(key, lease, { turnEndedAt: Date.now() })
        expect((await store.get(key))?.conversationId).toBe(key.conversationId)
        await sleep(1_500)
        expect(await store.get(key)).toBeNull()
        expect(await store.readJournal(key)).toEqual([])
        expect((await store.list(key.tenant)).sessions).toEqual([])
        const again = await store.acquire(key, { holderId: 'h', leaseMs: LONG_LEASE_MS })
        expect(again.create).toBe(true)
        expect(again.record).toBeNull()
      })

      it('keeps a session at least as long as a lease it granted', async () => {
        const store = await open({ ttlMs: 300 })
        const key = newKey()
        const first = await store.acquire(key, { holderId: 'long-turn', leaseMs: 5_000 })
        expect(first.create).toBe(true)
        await sleep(900)
        const second = await store.acquire(key, { holderId: 'next', leaseMs: 5_000 })
        expect(second.holders).toBe(2)
        expect(second.create).toBe(false)
        expect(second.lease.fencingToken).toBeGreaterThan(first.lease.fencingToken)
      })

      it('keeps a session and its journal alive while turns keep coming, and honours a per-call ttlMs', async () => {
        const store = await open({ ttlMs: 1_500 })
        const key = newKey()
        const { lease } = await createSession(store, key)
        await store.appendJournal(key, { kind: 'command', command: 'pip install pandas' })
        await store.release(key, lease, { turnEndedAt: Date.now() })
        for (let index = 0; index < 5; index += 1) {
          await sleep(400)
          const turn = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS })
          expect(turn.record?.conversationId).toBe(key.conversationId)
          await store.release(key, turn.lease, { turnEndedAt: Date.now() })
        }
        const long = await store.acquire(key, { holderId: holder(), leaseMs: LONG_LEASE_MS, ttlMs: 60_000 })
        await store.release(key, long.lease, { turnEndedAt: Date.now(), ttlMs: 60_000 })
        await sleep(2_000)
        expect((await store.get(key))?.turnCount).toBe(7)
        // The journal lives as long as its session: rehydration after a recreate needs every step.
        expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([
          { kind: 'command', command: 'pip install pandas' },
        ])
      })
    })

    describe('per-call TTL', () => {
      it('honours ttlMs on setSandbox, renew, setState and appendJournal, and falls back to the store default', async () => {
        const store = await open({ ttlMs: 1_500 })
        const long = { ttlMs: 60_000 }
        const viaSetSandbox = newKey()
        const viaRenew = newKey()
        const viaState = newKey()
        const viaJournal = newKey()
        const fallsBack = newKey()
        const mapping = { sandboxId: 'sbx-1', expectedSandboxId: null, providerId: 'mock' }
        // Each session's last write is the call under test; its short lease lapses long before the check.
        const begin = async (key: SessionKey, ttl?: { ttlMs: number }) => {
          const begun = await store.acquire(key, { holderId: holder(), leaseMs: SHORT_LEASE_MS })
          await store.setSandbox(key, begun.lease, { ...mapping, ...ttl })
          return begun.lease
        }
        await begin(viaSetSandbox, long)
        await store.renew(viaRenew, await begin(viaRenew), { leaseMs: SHORT_LEASE_MS, ...long })
        await begin(viaState)
        await store.setState(viaState, 'paused', long)
        await begin(viaJournal)
        await store.appendJournal(viaJournal, { kind: 'command', command: 'echo kept' }, long)
        await begin(fallsBack, long)
        await store.setState(fallsBack, 'paused')
        await sleep(2_200)
        for (const key of [viaSetSandbox, viaRenew, viaState, viaJournal]) {
          expect((await store.get(key))?.sandboxId).toBe('sbx-1')
        }
        expect(await store.readJournal(viaJournal)).toHaveLength(1)
        expect(await store.get(fallsBack)).toBeNull()
        for (const bad of [{ ttlMs: 0 }, { ttlMs: 1.5 }, { ttlMs: '60000' }]) {
          await expectCode(store.setState(viaState, 'paused', bad as never), 'INVALID_ARGUMENT')
          await expectCode(
            store.appendJournal(viaJournal, { kind: 'command', command: 'echo no' }, bad as never),
            'INVALID_ARGUMENT',
          )
        }
        expect(await store.readJournal(viaJournal)).toHaveLength(1)
      })
    })

    describe('input validation', () => {
      it('rejects bad keys, holders, leases and inputs with INVALID_ARGUMENT and writes nothing', async () => {
        const store = await open()
        const key = newKey()
        const good = { holderId: 'h', leaseMs: 1000 }
        const badKeys: unknown[] = [
          null,
          'conv',
          { tenant: key.tenant },
          { tenant: key.tenant, conversationId: '' },
          { tenant: key.tenant, conversationId: 'a\nb' },
          { tenant: key.tenant, conversationId: 'x'.repeat(513) },
          { tenant: key.tenant, conversationId: 42 },
          { tenant: 'bad tenant', conversationId: 'c' },
          { tenant: 'a:b', conversationId: 'c' },
          { tenant: '', conversationId: 'c' },
          { tenant: 'x'.repeat(65), conversationId: 'c' },
          { conversationId: 'c' },
        ]
        for (const bad of badKeys) {
          await expectCode(store.acquire(bad as SessionKey, good), 'INVALID_ARGUMENT')
          await expectCode(store.get(bad as SessionKey), 'INVALID_ARGUMENT')
          await expectCode(store.delete(bad as SessionKey), 'INVALID_ARGUMENT')
          await expectCode(store.readJournal(bad as SessionKey), 'INVALID_ARGUMENT')
        }
        const badAcquire: unknown[] = [
          undefined,
          {},
          { holderId: '', leaseMs: 1000 },
          { holderId: 'h\u0000', leaseMs: 1000 },
          { holderId: 'x'.repeat(200), leaseMs: 1000 },
          { holderId: 'h', leaseMs: 0 },
          { holderId: 'h', leaseMs: 1.5 },
          { holderId: 'h', leaseMs: '1000' },
          { holderId: 'h', leaseMs: Number.POSITIVE_INFINITY },
          { holderId: 'h', leaseMs: 1000, ttlMs: -1 },
        ]
        for (const bad of badAcquire) {
          await expectCode(store.acquire(key, bad as typeof good), 'INVALID_ARGUMENT')
        }
        const lease: Lease = { holderId: 'h', fencingToken: 1, expiresAt: Date.now() + 1000 }
        const badLeases: unknown[] = [
          null,
          {},
          { ...lease, holderId: '' },
          { ...lease, fencingToken: 0 },
          { ...lease, fencingToken: 1.5 },
          { ...lease, expiresAt: 'soon' },
        ]
        for (const bad of badLeases) {
          await expectCode(store.renew(key, bad as Lease, { leaseMs: 1000 }), 'INVALID_ARGUMENT')
          await expectCode(store.claimCreation(key, bad as Lease), 'INVALID_ARGUMENT')
          await expectCode(store.release(key, bad as Lease, { turnEndedAt: 1 }), 'INVALID_ARGUMENT')
        }
        await expectCode(store.renew(key, lease, { leaseMs: -5 }), 'INVALID_ARGUMENT')
        const badSet: unknown[] = [
          null,
          { sandboxId: '', expectedSandboxId: null, providerId: 'p' },
          { sandboxId: 's\n', expectedSandboxId: null, providerId: 'p' },
          { sandboxId: 'x'.repeat(300), expectedSandboxId: null, providerId: 'p' },
          { sandboxId: 's', providerId: 'p' },
          { sandboxId: 's', expectedSandboxId: '', providerId: 'p' },
          { sandboxId: 's', expectedSandboxId: null, providerId: '' },
          { sandboxId: 's', expectedSandboxId: null, providerId: 'p', state: 'sleeping' },
          { sandboxId: 's', expectedSandboxId: null, providerId: 'p', surprise: true },
        ]
        for (const bad of badSet) {
          await expectCode(store.setSandbox(key, lease, bad as never), 'INVALID_ARGUMENT')
        }
        const badRelease: unknown[] = [
          null,
          {},
          { turnEndedAt: -1 },
          { turnEndedAt: 'now' },
          { turnEndedAt: 1, runningSeconds: -1 },
          { turnEndedAt: 1, pausedSeconds: Number.NaN },
          { turnEndedAt: 1, stateIfLast: 'gone' },
          { turnEndedAt: 1, ttlMs: 0 },
          { turnEndedAt: 1, manifest: 'yes' },
          { turnEndedAt: 1, manifest: { writtenAt: 1, sandboxId: 's', memory: 'lots' } },
          { turnEndedAt: 1, manifest: { writtenAt: 1, sandboxId: '' } },
          { turnEndedAt: 1, manifestIfTurnCount: -1 },
          { turnEndedAt: 1, runningFrom: -5 },
          { turnEndedAt: 1, runningFrom: 'earlier' },
          { turnEndedAt: 1, manifestIfTurnCount: 1.5 },
          { turnEndedAt: 1, manifestIfTurnCount: '2' },
          { turnEndedAt: 1, extra: 1 },
        ]
        for (const bad of badRelease) {
          await expectCode(store.release(key, lease, bad as never), 'INVALID_ARGUMENT')
        }
        await expectCode(store.setState(key, 'asleep' as never), 'INVALID_ARGUMENT')
        await expectCode(store.setState(key, 'paused', { at: -3 }), 'INVALID_ARGUMENT')
        const badSteps: unknown[] = [
          null,
          {},
          { kind: 'shell', command: 'ls' },
          { kind: 'command', command: '' },
          { kind: 'command', command: 7 },
          { kind: 'code', code: 'x', language: 'ruby' },
          { kind: 'file', path: '', content: 'x' },
          { kind: 'file', path: '/a' },
          // issue 14 item 9e: a path outside the sandbox's home would block every later replay.
          { kind: 'file', path: '../../etc/passwd', content: 'x' },
          { kind: 'file', path: '/etc/passwd', content: 'x' },
          { kind: 'command', command: 'ls', secret: 'x' },
        ]
        for (const bad of badSteps) {
          await expectCode(store.appendJournal(key, bad as JournalStep), 'INVALID_ARGUMENT')
        }
        await expectCode(store.list('bad tenant!'), 'INVALID_ARGUMENT')
        await expectCode(store.list(key.tenant, { limit: 0 }), 'INVALID_ARGUMENT')
        await expectCode(store.list(key.tenant, { limit: 1001 }), 'INVALID_ARGUMENT')
        await expectCode(store.list(key.tenant, { cursor: 'not-a-cursor' }), 'INVALID_ARGUMENT')
        await expectCode(store.list(key.tenant, { cursor: '' }), 'INVALID_ARGUMENT')

        // Nothing of the above reached the store.
        expect(await store.get(key)).toBeNull()
        expect(await store.readJournal(key)).toEqual([])
        expect(await store.delete(key)).toBe(false)
        const first = await store.acquire(key, { holderId: 'h', leaseMs: LONG_LEASE_MS })
        expect(first.create).toBe(true)
        expect(first.holders).toBe(1)
      })
    })

    describe('close', () => {
      it('refuses calls after close', async () => {
        const store = await open()
        await store.close()
        const error = await expectCode(store.get(newKey()), 'STORE_UNAVAILABLE')
        expect(error.message).toMatch(/close/i)
      })
    })

    if (options.corruptRecord) {
      const corruptRecord = options.corruptRecord
      describe('corrupt records', () => {
        it('refuses a corrupt record with STORE_CORRUPT naming it, in every method, and leaves it as is', async () => {
          const store = await open()
          const key = newKey()
          const { lease } = await createSession(store, key, 'sbx-1')
          const other = await store.acquire(key, { holderId: 'other', leaseMs: LONG_LEASE_MS })
          const damage = await corruptRecord(store, key)
          const checks: Array<[string, () => Promise<unknown>]> = [
            ['get', () => store.get(key)],
            ['acquire', () => store.acquire(key, { holderId: 'h', leaseMs: LONG_LEASE_MS })],
            ['claimCreation', () => store.claimCreation(key, other.lease)],
            [
              'setSandbox',
              () =>
                store.setSandbox(key, lease, {
                  sandboxId: 'sbx-2',
                  expectedSandboxId: 'sbx-1',
                  providerId: 'p',
                }),
            ],
            [
              'release',
              () =>
                store.release(key, lease, {
                  turnEndedAt: Date.now(),
                  manifest: manifestFor('sbx-1'),
                  stateIfLast: 'paused',
                }),
            ],
            ['setState', () => store.setState(key, 'paused')],
            ['list', () => store.list(key.tenant)],
          ]
          for (const [method, call] of checks) {
            const error = await expectCode(call(), 'STORE_CORRUPT')
            expect(error.message, method).toContain(damage.location)
            expect(await damage.isUntouched(), `${method} changed the corrupt record`).toBe(true)
          }
          // The documented way out: delete the session, then it starts over.
          expect(await store.delete(key)).toBe(true)
          expect(await store.get(key)).toBeNull()
        })
      })
    }
  })
}
