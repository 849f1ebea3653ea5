// Store conformance area: release: the last live holder, stateIfLast, lapsed and dead holders, a session deleted meanwhile.
import { defineArea, LEASE, newKey, sleep } from './context.js'

/** Registers the release area of the SessionStore conformance suite. */
export const releaseConformance = defineArea('release', ({ test, expect, open, createSession, leases }) => {
  test('tells only the last live holder that it is last, and applies stateIfLast only for it', async () => {
    const store = await open()
    const key = newKey()
    const { lease: a } = await createSession(store, key, 'sbx-1')
    const b = await store.acquire(key, { holderId: 'b', leaseMs: LEASE.long })
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

  test('counts a dead holder only until its lease lapses', async () => {
    const store = await open()
    const key = newKey()
    const { lease: live } = await createSession(store, key, 'sbx-1')
    const dead = await store.acquire(key, { holderId: 'dies', leaseMs: leases.short })
    expect(dead.holders).toBe(2)
    await sleep(leases.lapseWait)
    const probe = await store.acquire(key, { holderId: 'probe', leaseMs: LEASE.long })
    expect(probe.holders).toBe(2)
    expect((await store.release(key, probe.lease, { turnEndedAt: Date.now() })).last).toBe(false)
    const end = await store.release(key, live, { turnEndedAt: Date.now(), stateIfLast: 'paused' })
    expect(end.last).toBe(true)
    expect(end.record?.state).toBe('paused')
  })

  test('still records a turn released after its lease lapsed', async () => {
    const store = await open()
    const key = newKey()
    const { lease: creator } = await createSession(store, key)
    await store.release(key, creator, { turnEndedAt: Date.now() })
    const slow = await store.acquire(key, { holderId: 'slow', leaseMs: leases.short })
    await sleep(leases.lapseWait)
    const result = await store.release(key, slow.lease, { turnEndedAt: Date.now(), runningSeconds: 1 })
    expect(result.last).toBe(true)
    expect(result.record?.turnCount).toBe(2)
  })

  test('reports a session deleted meanwhile as a null record', async () => {
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
