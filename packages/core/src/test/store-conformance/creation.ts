// Store conformance area: single-flight creation: one creator among concurrent holders, claim hand-over.
import {
  LAPSE_WAIT_MS,
  LONG_LEASE_MS,
  newKey,
  SHORT_LEASE_MS,
  type StoreConformanceContext,
  sleep,
} from './context.js'

/** Registers the creation area of the SessionStore conformance suite. */
export function creationConformance(context: StoreConformanceContext): void {
  const { describe, test, expect } = context.api
  const { open, expectCode } = context
  describe('single-flight creation', () => {
    test('gives exactly one of 100 concurrent holders the creation, and all see one mapping', async () => {
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

    test('hands the claim to a waiter when the creator lapses, and refuses the dead creator', async () => {
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

    test('frees the claim when the creator releases without creating', async () => {
      const store = await open()
      const key = newKey()
      const creator = await store.acquire(key, { holderId: 'creator', leaseMs: LONG_LEASE_MS })
      const waiter = await store.acquire(key, { holderId: 'waiter', leaseMs: LONG_LEASE_MS })
      expect(creator.create).toBe(true)
      const released = await store.release(key, creator.lease, { turnEndedAt: Date.now() })
      expect(released).toEqual({ last: false, record: null })
      expect((await store.claimCreation(key, waiter.lease)).create).toBe(true)
    })

    test('grants the claim again to a new holder after the creator lapsed', async () => {
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
}
