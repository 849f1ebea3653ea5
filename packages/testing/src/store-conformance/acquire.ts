// Store conformance area: acquire (creation claim, shared holders, fencing tokens) and renew.
import { defineArea, holder, LEASE, newKey, type StoreConformanceContext, sleep } from './context.js'

const acquire = defineArea('acquire', ({ test, expect, open, createSession }) => {
  test('grants the creation claim on a new session and returns no record', async () => {
    const store = await open()
    const key = newKey()
    const before = Date.now()
    const result = await store.acquire(key, { holderId: 'h1', leaseMs: LEASE.long })
    expect(result.record).toBeNull()
    expect(result.create).toBe(true)
    expect(result.holders).toBe(1)
    expect(result.lease.holderId).toBe('h1')
    expect(result.lease.fencingToken).toBeGreaterThanOrEqual(1)
    // The store clock may differ from ours a little; the lease runs about leaseMs from now.
    expect(result.lease.expiresAt).toBeGreaterThan(before + LEASE.long - 5_000)
    expect(result.lease.expiresAt).toBeLessThan(Date.now() + LEASE.long + 5_000)
    expect(await store.get(key)).toBeNull()
  })

  test('lets overlapping holders share a session, each with a higher fencing token', async () => {
    const store = await open()
    const key = newKey()
    const first = await store.acquire(key, { holderId: 'h1', leaseMs: LEASE.long })
    const second = await store.acquire(key, { holderId: 'h2', leaseMs: LEASE.long })
    expect(second.create).toBe(false)
    expect(second.holders).toBe(2)
    expect(second.lease.fencingToken).toBeGreaterThan(first.lease.fencingToken)
    const third = await store.acquire(key, { holderId: 'h3', leaseMs: LEASE.long })
    expect(third.holders).toBe(3)
    expect(third.lease.fencingToken).toBeGreaterThan(second.lease.fencingToken)
  })

  test('returns the mapped record to later turns and records when the turn started', async () => {
    const store = await open()
    const key = newKey()
    const { lease, record: created } = await createSession(store, key, 'sbx-1')
    await store.release(key, lease, { turnEndedAt: Date.now() })
    const next = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
    expect(next.create).toBe(false)
    expect(next.record?.sandboxId).toBe('sbx-1')
    expect(next.record?.conversationId).toBe(key.conversationId)
    expect(next.record?.lastTurnStartedAt).toBeGreaterThanOrEqual(created.lastTurnStartedAt ?? 0)
    expect(next.lease.fencingToken).toBeGreaterThan(lease.fencingToken)
  })
})

const renew = defineArea('renew', ({ test, expect, open, expectCode, leases, withinLease }) => {
  test('extends a live lease and refuses a lapsed or unknown one', async () => {
    const store = await open()
    const key = newKey()
    const acquired = await store.acquire(key, { holderId: 'h', leaseMs: 5_000 })
    const renewed = await store.renew(key, acquired.lease, { leaseMs: LEASE.long })
    expect(renewed.holderId).toBe('h')
    expect(renewed.fencingToken).toBe(acquired.lease.fencingToken)
    expect(renewed.expiresAt).toBeGreaterThan(acquired.lease.expiresAt)
    await expectCode(
      store.renew(key, { ...acquired.lease, holderId: 'someone-else' }, { leaseMs: 1000 }),
      'LEASE_LOST',
    )
    await expectCode(store.renew(newKey(), acquired.lease, { leaseMs: 1000 }), 'LEASE_LOST')

    const short = await store.acquire(key, { holderId: 'short', leaseMs: leases.short })
    await sleep(leases.lapseWait)
    await expectCode(store.renew(key, short.lease, { leaseMs: LEASE.long }), 'LEASE_LOST')
  })

  test('keeps a renewed holder counted past its first expiry', async () => {
    const store = await open()
    const key = newKey()
    await withinLease(async () => {
      const a = await store.acquire(key, { holderId: 'a', leaseMs: 600 })
      await store.renew(key, a.lease, { leaseMs: LEASE.long })
    }, 600)
    await sleep(leases.lapseWait)
    const b = await store.acquire(key, { holderId: 'b', leaseMs: LEASE.long })
    expect(b.holders).toBe(2)
  })
})

/** Registers the acquire area of the SessionStore conformance suite. */
export function acquireConformance(context: StoreConformanceContext): void {
  acquire(context)
  renew(context)
}
