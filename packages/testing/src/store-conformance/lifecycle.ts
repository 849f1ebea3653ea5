// Store conformance area: identity (a v1 store with an id), delete, and refusing calls after close.
import { defineArea, LEASE, newKey, type StoreConformanceContext } from './context.js'

const identity = defineArea('identity', ({ test, expect, open }) => {
  test('describes itself as a v1 store', async () => {
    const store = await open()
    expect(store.specificationVersion).toBe('v1')
    expect(typeof store.storeId).toBe('string')
    expect(store.storeId.length).toBeGreaterThan(0)
  })
})

const deletion = defineArea('delete', ({ test, expect, open, createSession, expectCode }) => {
  test('removes the record, its leases and its journal', async () => {
    const store = await open()
    const key = newKey()
    const { lease } = await createSession(store, key)
    await store.appendJournal(key, { kind: 'command', command: 'echo hi' })
    expect(await store.delete(key)).toBe(true)
    expect(await store.get(key)).toBeNull()
    expect(await store.readJournal(key)).toEqual([])
    await expectCode(store.renew(key, lease, { leaseMs: 1000 }), 'LEASE_LOST')
    expect(await store.delete(key)).toBe(false)
    const fresh = await store.acquire(key, { holderId: 'h', leaseMs: LEASE.long })
    expect(fresh.create).toBe(true)
    expect(fresh.holders).toBe(1)
    expect(fresh.record).toBeNull()
  })

  test('answers false for a session that never existed', async () => {
    const store = await open()
    expect(await store.delete(newKey())).toBe(false)
  })
})

const closing = defineArea('close', ({ test, expect, open, expectCode }) => {
  test('refuses calls after close', async () => {
    const store = await open()
    await store.close()
    const error = await expectCode(store.get(newKey()), 'STORE_UNAVAILABLE')
    expect(error.message).toMatch(/close/i)
  })
})

/** Registers the lifecycle area of the SessionStore conformance suite. */
export function lifecycleConformance(context: StoreConformanceContext): void {
  identity(context)
  deletion(context)
  closing(context)
}
