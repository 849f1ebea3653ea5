// Store conformance area: single-flight creation: one creator among concurrent holders, claim hand-over.
import { type AreaTools, defineArea, LEASE, mapping, newKey, sleep } from './context.js'

/** Registers the creation area of the SessionStore conformance suite. */
export const creationConformance = defineArea('single-flight creation', (tools) => {
  concurrentCreation(tools)
  claimHandOver(tools)
})

/** One creator among 100 concurrent holders; everyone sees its mapping. */
function concurrentCreation({ test, expect, open, expectCode }: AreaTools): void {
  test('gives exactly one of 100 concurrent holders the creation, and all see one mapping', async () => {
    const store = await open()
    const key = newKey()
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, index) =>
        store.acquire(key, { holderId: `holder-${index}`, leaseMs: LEASE.long }),
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

    await store.setSandbox(key, creator.lease, mapping('sbx-only'))
    const seen = await Promise.all(waiters.map((w) => store.claimCreation(key, w.lease)))
    expect(seen.every((poll) => !poll.create && poll.record?.sandboxId === 'sbx-only')).toBe(true)

    // A waiter that tries to create anyway is refused: the compare-and-set sees the mapping.
    await expectCode(store.setSandbox(key, waiters[0]!.lease, mapping('sbx-dup')), 'LEASE_LOST')
    const releases = await Promise.all(
      results.map((result) => store.release(key, result.lease, { turnEndedAt: Date.now() })),
    )
    expect(releases.filter((release) => release.last)).toHaveLength(1)
    const record = await store.get(key)
    expect(record?.sandboxId).toBe('sbx-only')
    expect(record?.turnCount).toBe(100)
  })
}

/** The creation claim passes on when the creator lapses or gives up. */
function claimHandOver({ test, expect, open, expectCode, leases, withinLease }: AreaTools): void {
  test('hands the claim to a waiter when the creator lapses, and refuses the dead creator', async () => {
    const store = await open()
    const key = newKey()
    // The waiter's acquire and first claim must see the creator still live.
    const [creator, waiter, early] = await withinLease(async () => {
      const first = await store.acquire(key, { holderId: 'creator', leaseMs: leases.short })
      const second = await store.acquire(key, { holderId: 'waiter', leaseMs: LEASE.long })
      return [first, second, await store.claimCreation(key, second.lease)] as const
    })
    expect(creator.create).toBe(true)
    expect(waiter.create).toBe(false)
    expect(early.create).toBe(false)
    await sleep(leases.lapseWait)
    const claim = await store.claimCreation(key, waiter.lease)
    expect(claim).toEqual({ record: null, create: true })
    // Polling again keeps the claim with the same holder.
    expect((await store.claimCreation(key, waiter.lease)).create).toBe(true)
    await expectCode(store.claimCreation(key, creator.lease), 'LEASE_LOST')
    await expectCode(store.setSandbox(key, creator.lease, mapping('sbx-late')), 'LEASE_LOST')
    const record = await store.setSandbox(key, waiter.lease, mapping('sbx-waiter'))
    expect(record.sandboxId).toBe('sbx-waiter')
    const late = await store.acquire(key, { holderId: 'late', leaseMs: LEASE.long })
    expect(late.create).toBe(false)
    expect(late.record?.sandboxId).toBe('sbx-waiter')
  })

  test('frees the claim when the creator releases without creating', async () => {
    const store = await open()
    const key = newKey()
    const creator = await store.acquire(key, { holderId: 'creator', leaseMs: LEASE.long })
    const waiter = await store.acquire(key, { holderId: 'waiter', leaseMs: LEASE.long })
    expect(creator.create).toBe(true)
    const released = await store.release(key, creator.lease, { turnEndedAt: Date.now() })
    expect(released).toEqual({ last: false, record: null })
    expect((await store.claimCreation(key, waiter.lease)).create).toBe(true)
  })

  test('grants the claim again to a new holder after the creator lapsed', async () => {
    const store = await open()
    const key = newKey()
    const blocked = await withinLease(async () => {
      await store.acquire(key, { holderId: 'creator', leaseMs: leases.short })
      return store.acquire(key, { holderId: 'early', leaseMs: leases.short })
    })
    expect(blocked.create).toBe(false)
    await sleep(leases.lapseWait)
    const next = await store.acquire(key, { holderId: 'next', leaseMs: LEASE.long })
    expect(next.create).toBe(true)
    expect(next.holders).toBe(1)
  })
}
