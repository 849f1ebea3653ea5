// Store conformance area: running-time accounting of overlapping turns on release.
import { defineArea, holder, LEASE, newKey, sleep } from './context.js'

/** Registers the accounting area of the SessionStore conformance suite. */
export const accountingConformance = defineArea(
  'release: running-time accounting',
  ({ test, expect, open, createSession, leases, withinLease }) => {
    test('counts the running time of overlapping turns once, from the first start to the last end', async () => {
      const store = await open()
      const key = newKey()
      const { lease } = await createSession(store, key, 'sbx-1')
      await store.release(key, lease, { turnEndedAt: 2_000, runningFrom: 1_000 })
      expect((await store.get(key))?.runningSeconds).toBeCloseTo(1, 6)

      // A runs 10–20 s, B 15–30 s (A ends first and leaves the sandbox running for B): 20 s, not 25.
      const a = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const b = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const aEnd = await store.release(key, a.lease, { turnEndedAt: 20_000, runningFrom: 10_000 })
      expect(aEnd.last).toBe(false)
      expect(aEnd.record?.runningSeconds).toBeCloseTo(1, 6)
      const bEnd = await store.release(key, b.lease, { turnEndedAt: 30_000, runningFrom: 15_000 })
      expect(bEnd.last).toBe(true)
      expect(bEnd.record?.runningSeconds).toBeCloseTo(21, 6)

      // C runs 40–60 s and D, inside it, 45–50 s (D ends first); a turn that never ran the sandbox (E)
      // ends last and pauses it: counted up to E's end, 40–65 s.
      const c = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const d = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const e = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      await store.release(key, d.lease, { turnEndedAt: 50_000, runningFrom: 45_000 })
      await store.release(key, c.lease, { turnEndedAt: 60_000, runningFrom: 40_000 })
      const eEnd = await store.release(key, e.lease, { turnEndedAt: 65_000 })
      expect(eEnd.last).toBe(true)
      expect(eEnd.record?.runningSeconds).toBeCloseTo(46, 6)

      // A run whose last holder died never counts; the next run starts afresh.
      const f = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      // The release must see the dying holder still live.
      const [dies, fEnd] = await withinLease(async () => {
        const acquired = await store.acquire(key, { holderId: 'dies', leaseMs: leases.short })
        return [acquired, await store.release(key, f.lease, { turnEndedAt: 70_000, runningFrom: 66_000 })]
      })
      expect(dies.holders).toBe(2)
      expect(fEnd.last).toBe(false)
      await sleep(leases.lapseWait)
      const g = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      expect(g.holders).toBe(1)
      const gEnd = await store.release(key, g.lease, { turnEndedAt: 90_000, runningFrom: 80_000 })
      expect(gEnd.record?.runningSeconds).toBeCloseTo(56, 6)
      // runningSeconds given as is still adds up.
      const h = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const hEnd = await store.release(key, h.lease, { turnEndedAt: 91_000, runningSeconds: 0.5 })
      expect(hEnd.record?.runningSeconds).toBeCloseTo(56.5, 6)
    })
  },
)
