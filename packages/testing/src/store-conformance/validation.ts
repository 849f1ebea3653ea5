// Store conformance area: input validation: INVALID_ARGUMENT for bad input, nothing written.
import type { JournalStep, SessionKey } from '@sandkeep/core'
import type { Lease } from '@sandkeep/core/store'
import { defineArea, LEASE, newKey } from './context.js'
import {
  badAcquires,
  badKeys,
  badLeases,
  badReleases,
  badSetSandboxes,
  badSteps,
} from './validation-cases.js'

/** Registers the validation area of the SessionStore conformance suite. */
export const validationConformance = defineArea('input validation', ({ test, expect, open, expectCode }) => {
  const refused = (promise: Promise<unknown>) => expectCode(promise, 'INVALID_ARGUMENT')
  test('rejects bad keys, holders, leases and inputs with INVALID_ARGUMENT and writes nothing', async () => {
    const store = await open()
    const key = newKey()
    const good = { holderId: 'h', leaseMs: 1000 }
    for (const bad of badKeys(key.tenant) as SessionKey[]) {
      await refused(store.acquire(bad, good))
      await refused(store.get(bad))
      await refused(store.delete(bad))
      await refused(store.readJournal(bad))
    }
    for (const bad of badAcquires) await refused(store.acquire(key, bad as typeof good))
    const lease: Lease = { holderId: 'h', fencingToken: 1, expiresAt: Date.now() + 1000 }
    for (const bad of badLeases(lease) as Lease[]) {
      await refused(store.renew(key, bad, { leaseMs: 1000 }))
      await refused(store.claimCreation(key, bad))
      await refused(store.release(key, bad, { turnEndedAt: 1 }))
    }
    await refused(store.renew(key, lease, { leaseMs: -5 }))
    for (const bad of badSetSandboxes) await refused(store.setSandbox(key, lease, bad as never))
    for (const bad of badReleases) await refused(store.release(key, lease, bad as never))
    await refused(store.setState(key, 'asleep' as never))
    await refused(store.setState(key, 'paused', { at: -3 }))
    for (const bad of badSteps) await refused(store.appendJournal(key, bad as JournalStep))
    await refused(store.list('bad tenant!'))
    await refused(store.list(key.tenant, { limit: 0 }))
    await refused(store.list(key.tenant, { limit: 1001 }))
    await refused(store.list(key.tenant, { cursor: 'not-a-cursor' }))
    await refused(store.list(key.tenant, { cursor: '' }))

    // Nothing of the above reached the store.
    expect(await store.get(key)).toBeNull()
    expect(await store.readJournal(key)).toEqual([])
    expect(await store.delete(key)).toBe(false)
    const first = await store.acquire(key, { holderId: 'h', leaseMs: LEASE.long })
    expect(first.create).toBe(true)
    expect(first.holders).toBe(1)
  })
})
