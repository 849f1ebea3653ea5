// Store conformance area: setSandbox: the first record, compare-and-set, fencing, lapsed and forged leases.
import type { Lease, SessionRecord } from '../../session-store.js'
import {
  LAPSE_WAIT_MS,
  LONG_LEASE_MS,
  newKey,
  SHORT_LEASE_MS,
  type StoreConformanceContext,
  sleep,
} from './context.js'

/** Registers the set-sandbox area of the SessionStore conformance suite. */
export function setSandboxConformance(context: StoreConformanceContext): void {
  const { describe, test, expect } = context.api
  const { open, createSession, expectCode } = context
  describe('setSandbox', () => {
    test('creates the record on first creation with every contract field', async () => {
      const store = await open()
      const key = newKey()
      const acquired = await store.acquire(key, { holderId: 'creator', leaseMs: LONG_LEASE_MS })
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
      await expectCode(
        store.setSandbox(key, lease, { sandboxId: 'sbx-b', expectedSandboxId: null, providerId: 'p' }),
        'LEASE_LOST',
      )
      await expectCode(
        store.setSandbox(key, lease, { sandboxId: 'sbx-b', expectedSandboxId: 'sbx-x', providerId: 'p' }),
        'LEASE_LOST',
      )
      expect((await store.get(key))?.sandboxId).toBe('sbx-a')
      const remapped = await store.setSandbox(key, lease, {
        sandboxId: 'sbx-b',
        expectedSandboxId: 'sbx-a',
        providerId: 'p',
      })
      expect(remapped.sandboxId).toBe('sbx-b')
      expect(remapped.template).toBe('base')
      expect((await store.get(key))?.sandboxId).toBe('sbx-b')
    })

    test('fences the mapping: a holder with an older token cannot overwrite a newer mapping', async () => {
      const store = await open()
      const key = newKey()
      const { lease: first } = await createSession(store, key, 'sbx-1')
      const second = await store.acquire(key, { holderId: 'newer', leaseMs: LONG_LEASE_MS })
      expect(second.lease.fencingToken).toBeGreaterThan(first.fencingToken)
      // The newer holder recreates the sandbox...
      const recreated = await store.setSandbox(key, second.lease, {
        sandboxId: 'sbx-2',
        expectedSandboxId: 'sbx-1',
        providerId: 'p',
      })
      expect(recreated.mappingToken).toBe(second.lease.fencingToken)
      // ...so the older holder, even knowing the current id, is refused.
      await expectCode(
        store.setSandbox(key, first, { sandboxId: 'sbx-3', expectedSandboxId: 'sbx-2', providerId: 'p' }),
        'LEASE_LOST',
      )
      expect((await store.get(key))?.sandboxId).toBe('sbx-2')
      // A holder arriving later gets a token above the mapping token and may write.
      const third = await store.acquire(key, { holderId: 'newest', leaseMs: LONG_LEASE_MS })
      expect(third.lease.fencingToken).toBeGreaterThan(recreated.mappingToken)
      const again = await store.setSandbox(key, third.lease, {
        sandboxId: 'sbx-4',
        expectedSandboxId: 'sbx-2',
        providerId: 'p',
      })
      expect(again.sandboxId).toBe('sbx-4')
    })

    test('refuses a write from a lapsed lease or a forged token', async () => {
      const store = await open()
      const key = newKey()
      const acquired = await store.acquire(key, { holderId: 'slow', leaseMs: SHORT_LEASE_MS })
      const forged: Lease = { ...acquired.lease, fencingToken: acquired.lease.fencingToken + 100 }
      await expectCode(
        store.setSandbox(key, forged, { sandboxId: 'sbx-f', expectedSandboxId: null, providerId: 'p' }),
        'LEASE_LOST',
      )
      await sleep(LAPSE_WAIT_MS)
      await expectCode(
        store.setSandbox(key, acquired.lease, {
          sandboxId: 'sbx-1',
          expectedSandboxId: null,
          providerId: 'p',
        }),
        'LEASE_LOST',
      )
      expect(await store.get(key)).toBeNull()
    })
  })
}
