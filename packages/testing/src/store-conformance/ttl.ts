// Store conformance area: TTL: idle sessions forgotten, kept while used, per-call ttlMs.
import type { SessionKey } from '@sandkeep/core'
import { defineArea, holder, LEASE, newKey, type StoreConformanceContext, sleep } from './context.js'

const idleTtl = defineArea('ttl', ({ test, expect, open, createSession, withinLease }) => {
  test('forgets a session idle past ttlMs', async () => {
    const store = await open({ ttlMs: 500 })
    const key = newKey()
    const { lease } = await createSession(store, key)
    await store.appendJournal(key, { kind: 'command', command: 'echo hi' })
    // The read must come within the 500 ms TTL the release started.
    const kept = await withinLease(async () => {
      await store.release(key, lease, { turnEndedAt: Date.now() })
      return store.get(key)
    }, 500)
    expect(kept?.conversationId).toBe(key.conversationId)
    await sleep(1_500)
    expect(await store.get(key)).toBeNull()
    expect(await store.readJournal(key)).toEqual([])
    expect((await store.list(key.tenant)).sessions).toEqual([])
    const again = await store.acquire(key, { holderId: 'h', leaseMs: LEASE.long })
    expect(again.create).toBe(true)
    expect(again.record).toBeNull()
  })

  test('keeps a session at least as long as a lease it granted', async () => {
    const store = await open({ ttlMs: 300 })
    const key = newKey()
    const [first, second] = await withinLease(async () => {
      const granted = await store.acquire(key, { holderId: 'long-turn', leaseMs: 5_000 })
      await sleep(900)
      return [granted, await store.acquire(key, { holderId: 'next', leaseMs: 5_000 })]
    }, 5_000)
    expect(first.create).toBe(true)
    expect(second.holders).toBe(2)
    expect(second.create).toBe(false)
    expect(second.lease.fencingToken).toBeGreaterThan(first.lease.fencingToken)
  })

  test('keeps a session and its journal alive while turns keep coming, and honours a per-call ttlMs', async () => {
    const store = await open({ ttlMs: 1_500 })
    const key = newKey()
    const { lease } = await createSession(store, key)
    await store.appendJournal(key, { kind: 'command', command: 'pip install pandas' })
    await store.release(key, lease, { turnEndedAt: Date.now() })
    for (let index = 0; index < 5; index += 1) {
      // Each turn must come within the 1.5 s TTL the previous release started.
      const turn = await withinLease(async () => {
        await sleep(400)
        return store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      }, 1_500)
      expect(turn.record?.conversationId).toBe(key.conversationId)
      await store.release(key, turn.lease, { turnEndedAt: Date.now() })
    }
    const long = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long, ttlMs: 60_000 })
    await store.release(key, long.lease, { turnEndedAt: Date.now(), ttlMs: 60_000 })
    await sleep(2_000)
    expect((await store.get(key))?.turnCount).toBe(7)
    // The journal lives as long as its session: rehydration after a recreate needs every step.
    expect((await store.readJournal(key)).map((entry) => entry.step)).toEqual([
      { kind: 'command', command: 'pip install pandas' },
    ])
  })
})

const perCallTtl = defineArea('per-call TTL', ({ test, expect, open, expectCode, leases, withinLease }) => {
  test('honours ttlMs on setSandbox, renew, setState and appendJournal, and falls back to the store default', async () => {
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
      const begun = await store.acquire(key, { holderId: holder(), leaseMs: leases.short })
      await store.setSandbox(key, begun.lease, { ...mapping, ...ttl })
      return begun.lease
    }
    await begin(viaSetSandbox, long)
    await withinLease(async () => {
      await store.renew(viaRenew, await begin(viaRenew), { leaseMs: leases.short, ...long })
    })
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

/** Registers the ttl area of the SessionStore conformance suite. */
export function ttlConformance(context: StoreConformanceContext): void {
  idleTtl(context)
  perCallTtl(context)
}
