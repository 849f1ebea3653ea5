// Store conformance area: the store's clock. The session manager dates a turn's events on the store's clock
// (read from a lease's `expiresAt`, which is the store's now + `leaseMs`) and makes gc's age decisions with
// `now()`, so that a process whose own clock jumped decides nothing on it.
import type { SessionStore } from '@sandkeep/core/store'
import { defineArea, holder, LEASE, newKey, type StoreConformanceContext } from './context.js'

/** The store's `now`, or undefined for a store without the capability (its tests then check nothing). */
function clockOf(store: SessionStore): (() => Promise<number>) | undefined {
  return typeof store.now === 'function' ? () => store.now!() : undefined
}

const clock = defineArea('clock', ({ test, expect, open, expectCode }) => {
  test('now() answers epoch ms, and a granted lease ends exactly leaseMs after the store clock at the call', async () => {
    const store = await open()
    const now = clockOf(store)
    if (!now) return
    const key = newKey()
    const before = await now()
    expect(Number.isFinite(before)).toBe(true)
    // Later than 2020: epoch milliseconds, not seconds.
    expect(before).toBeGreaterThan(1_577_836_800_000)
    const acquired = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
    const between = await now()
    const renewed = await store.renew(key, acquired.lease, { leaseMs: LEASE.long })
    const after = await now()
    expect(acquired.lease.expiresAt - LEASE.long).toBeGreaterThanOrEqual(before)
    expect(acquired.lease.expiresAt - LEASE.long).toBeLessThanOrEqual(between)
    expect(renewed.expiresAt - LEASE.long).toBeGreaterThanOrEqual(between)
    expect(renewed.expiresAt - LEASE.long).toBeLessThanOrEqual(after)
  })

  test('the record is dated on the same clock', async () => {
    const store = await open()
    const now = clockOf(store)
    if (!now) return
    const key = newKey()
    const before = await now()
    const acquired = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
    const record = await store.setSandbox(key, acquired.lease, {
      sandboxId: 'sbx-clock',
      expectedSandboxId: null,
      providerId: 'p',
    })
    const after = await now()
    expect(record.createdAt).toBeGreaterThanOrEqual(before)
    expect(record.createdAt).toBeLessThanOrEqual(after)
  })

  test('now() is refused after close', async () => {
    const store = await open()
    if (!clockOf(store)) return
    await store.close()
    await expectCode(store.now!(), 'STORE_UNAVAILABLE')
  })
})

/** Registers the clock area of the SessionStore conformance suite. */
export function clockConformance(context: StoreConformanceContext): void {
  clock(context)
}
