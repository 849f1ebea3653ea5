// Store conformance area: setSandbox: the first record, compare-and-set, fencing, lapsed and forged leases.
import type { Lease, SessionRecord } from '@sandkeep/core/store'
import { type AreaTools, defineArea, LEASE, mapping, newKey, sleep } from './context.js'

/** Registers the set-sandbox area of the SessionStore conformance suite. */
export const setSandboxConformance = defineArea('setSandbox', (tools) => {
  firstCreationAndCompareAndSet(tools)
  fencing(tools)
})

/** The record a first creation writes, and the compare-and-set on the expected id. */
function firstCreationAndCompareAndSet({ test, expect, open, createSession, expectCode }: AreaTools): void {
  test('creates the record on first creation with every contract field', async () => {
    const store = await open()
    const key = newKey()
    const acquired = await store.acquire(key, { holderId: 'creator', leaseMs: LEASE.long })
    const record = await store.setSandbox(key, acquired.lease, {
      sandboxId: 'sbx-first',
      expectedSandboxId: null,
      providerId: 'test-provider',
      template: 'code-interpreter-v1',
    })
    const expected: Partial<SessionRecord> = {
      schemaVersion: 1,
      tenant: key.tenant,
      conversationId: key.conversationId,
      sandboxId: 'sbx-first',
      providerId: 'test-provider',
      template: 'code-interpreter-v1',
      lastTurnEndedAt: null,
      turnCount: 0,
      runningSeconds: 0,
      pausedSeconds: 0,
      state: 'running',
      pausedAt: null,
      mappingToken: acquired.lease.fencingToken,
      manifest: null,
      lastTurnUsedSandbox: null,
    }
    expect(record).toMatchObject(expected)
    expect(typeof record.createdAt).toBe('number')
    expect(record.updatedAt).toBeGreaterThanOrEqual(record.createdAt)
    expect(typeof record.lastTurnStartedAt).toBe('number')
    expect(await store.get(key)).toEqual(record)
  })

  test('refuses a compare-and-set whose expected id is not the stored one', async () => {
    const store = await open()
    const key = newKey()
    const { lease } = await createSession(store, key, 'sbx-a')
    await expectCode(store.setSandbox(key, lease, mapping('sbx-b')), 'LEASE_LOST')
    await expectCode(store.setSandbox(key, lease, mapping('sbx-b', 'sbx-x')), 'LEASE_LOST')
    expect((await store.get(key))?.sandboxId).toBe('sbx-a')
    const remapped = await store.setSandbox(key, lease, mapping('sbx-b', 'sbx-a'))
    expect(remapped.sandboxId).toBe('sbx-b')
    expect(remapped.template).toBe('base')
    expect((await store.get(key))?.sandboxId).toBe('sbx-b')
  })
}

/** Fencing: older tokens, lapsed leases and forged tokens cannot write. */
function fencing({ test, expect, open, createSession, expectCode, leases }: AreaTools): void {
  test('fences the mapping: a holder with an older token cannot overwrite a newer mapping', async () => {
    const store = await open()
    const key = newKey()
    const { lease: first } = await createSession(store, key, 'sbx-1')
    const second = await store.acquire(key, { holderId: 'newer', leaseMs: LEASE.long })
    expect(second.lease.fencingToken).toBeGreaterThan(first.fencingToken)
    // The newer holder recreates the sandbox...
    const recreated = await store.setSandbox(key, second.lease, mapping('sbx-2', 'sbx-1'))
    expect(recreated.mappingToken).toBe(second.lease.fencingToken)
    // ...so the older holder, even knowing the current id, is refused.
    await expectCode(store.setSandbox(key, first, mapping('sbx-3', 'sbx-2')), 'LEASE_LOST')
    expect((await store.get(key))?.sandboxId).toBe('sbx-2')
    // A holder arriving later gets a token above the mapping token and may write.
    const third = await store.acquire(key, { holderId: 'newest', leaseMs: LEASE.long })
    expect(third.lease.fencingToken).toBeGreaterThan(recreated.mappingToken)
    const again = await store.setSandbox(key, third.lease, mapping('sbx-4', 'sbx-2'))
    expect(again.sandboxId).toBe('sbx-4')
  })

  test('refuses a write from a lapsed lease or a forged token', async () => {
    const store = await open()
    const key = newKey()
    const acquired = await store.acquire(key, { holderId: 'slow', leaseMs: leases.short })
    const forged: Lease = { ...acquired.lease, fencingToken: acquired.lease.fencingToken + 100 }
    await expectCode(store.setSandbox(key, forged, mapping('sbx-f')), 'LEASE_LOST')
    await sleep(leases.lapseWait)
    await expectCode(store.setSandbox(key, acquired.lease, mapping('sbx-1')), 'LEASE_LOST')
    expect(await store.get(key)).toBeNull()
  })
}
