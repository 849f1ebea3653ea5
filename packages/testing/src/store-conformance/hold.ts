// Store conformance area: hold: a last holder's release that keeps its lease while it pauses the sandbox
// (`holdIfLast`), other turns refused until `releaseHold` or the lease lapses; and `usedSandbox`.
import type { SessionStore } from '@sandkeep/core/store'
import { defineArea, holder, LEASE, newKey, sleep } from './context.js'

/** Whether the store keeps holds (an optional capability of the contract). */
const holds = (store: SessionStore) => typeof store.releaseHold === 'function'

/** Registers the hold area of the SessionStore conformance suite. */
export const holdConformance = defineArea(
  'hold',
  ({ test, expect, open, createSession, expectCode, leases, withinLease }) => {
    test('holdIfLast keeps the last holder: acquire refuses with SESSION_BUSY until releaseHold', async () => {
      const store = await open()
      const key = newKey()
      const { lease } = await createSession(store, key, 'sbx-1')
      const released = await store.release(key, lease, {
        turnEndedAt: Date.now(),
        stateIfLast: 'paused',
        holdIfLast: true,
      })
      expect(released.last).toBe(true)
      expect(released.record?.state).toBe('paused')
      expect(released.record?.turnCount).toBe(1)
      if (!holds(store)) {
        expect(released.held ?? false).toBe(false)
        return
      }
      expect(released.held).toBe(true)
      const refused = await expectCode(
        store.acquire(key, { holderId: holder(), leaseMs: LEASE.long }),
        'SESSION_BUSY',
      )
      expect(refused.retryable).toBe(true)
      expect(refused.retryAfterMs).toBeGreaterThan(0)
      expect(refused.retryAfterMs).toBeLessThanOrEqual(LEASE.long)
      // Refused means nothing written: the record is as the release left it.
      expect(await store.get(key)).toEqual(released.record)
      await store.releaseHold!(key, lease)
      const next = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      expect(next.holders).toBe(1)
      expect(next.record?.sandboxId).toBe('sbx-1')
      expect(next.lease.fencingToken).toBeGreaterThan(lease.fencingToken)
    })

    test('holdIfLast does nothing for a holder that is not the last', async () => {
      const store = await open()
      const key = newKey()
      const { lease: a } = await createSession(store, key, 'sbx-1')
      const b = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const first = await store.release(key, a, { turnEndedAt: Date.now(), holdIfLast: true })
      expect(first.last).toBe(false)
      expect(first.held ?? false).toBe(false)
      const c = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      expect(c.holders).toBe(2)
      expect((await store.release(key, c.lease, { turnEndedAt: Date.now() })).last).toBe(false)
      expect((await store.release(key, b.lease, { turnEndedAt: Date.now() })).last).toBe(true)
    })

    test('a hold lapses with its lease, and renewing the lease keeps it', async () => {
      const store = await open()
      if (!holds(store)) return
      const key = newKey()
      const { lease: creator } = await createSession(store, key, 'sbx-1')
      await store.release(key, creator, { turnEndedAt: Date.now() })
      const held = await withinLease(async () => {
        const short = await store.acquire(key, { holderId: holder(), leaseMs: leases.short })
        return store.release(key, short.lease, { turnEndedAt: Date.now(), holdIfLast: true })
      })
      expect(held.held).toBe(true)
      await sleep(leases.lapseWait)
      const after = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      expect(after.holders).toBe(1)
      const renewed = await store.release(key, after.lease, { turnEndedAt: Date.now(), holdIfLast: true })
      expect(renewed.held).toBe(true)
      await store.renew(key, after.lease, { leaseMs: LEASE.long })
      await expectCode(store.acquire(key, { holderId: holder(), leaseMs: LEASE.long }), 'SESSION_BUSY')
      await store.releaseHold!(key, after.lease)
      expect((await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })).holders).toBe(1)
    })

    test("releaseHold is a no-op without a hold or with another holder's lease", async () => {
      const store = await open()
      if (!holds(store)) return
      const key = newKey()
      const { lease: a } = await createSession(store, key, 'sbx-1')
      await store.releaseHold!(key, a)
      const b = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      await store.release(key, a, { turnEndedAt: Date.now() })
      expect((await store.release(key, b.lease, { turnEndedAt: Date.now(), holdIfLast: true })).held).toBe(
        true,
      )
      await store.releaseHold!(key, a)
      await expectCode(store.acquire(key, { holderId: holder(), leaseMs: LEASE.long }), 'SESSION_BUSY')
      await store.releaseHold!(key, b.lease)
      await store.releaseHold!(key, b.lease)
      expect((await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })).holders).toBe(1)
    })

    test('usedSandbox is recorded as lastTurnUsedSandbox and left as it was when omitted', async () => {
      const store = await open()
      const key = newKey()
      const { lease, record } = await createSession(store, key, 'sbx-1')
      expect(record.lastTurnUsedSandbox).toBeNull()
      const used = await store.release(key, lease, { turnEndedAt: Date.now(), usedSandbox: true })
      expect(used.record?.lastTurnUsedSandbox).toBe(true)
      const quiet = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      expect(quiet.record?.lastTurnUsedSandbox).toBe(true)
      const kept = await store.release(key, quiet.lease, { turnEndedAt: Date.now() })
      expect(kept.record?.lastTurnUsedSandbox).toBe(true)
      const idle = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const unused = await store.release(key, idle.lease, { turnEndedAt: Date.now(), usedSandbox: false })
      expect(unused.record?.lastTurnUsedSandbox).toBe(false)
      expect(await store.get(key)).toEqual(unused.record)
    })
  },
)
