// Store conformance area: corrupt records: STORE_CORRUPT in every method, record left as is (needs options.corruptRecord).
import { LEASE, manifestFor, mapping, newKey, type StoreConformanceContext } from './context.js'

/** Registers the corruption area of the SessionStore conformance suite. */
export function corruptionConformance(context: StoreConformanceContext): void {
  const { describe, test, expect } = context.api
  const { open, createSession, expectCode } = context
  const { corruptRecord } = context.options
  if (corruptRecord) {
    describe('corrupt records', () => {
      test('refuses a corrupt record with STORE_CORRUPT naming it, in every method, and leaves it as is', async () => {
        const store = await open()
        const key = newKey()
        const { lease } = await createSession(store, key, 'sbx-1')
        const other = await store.acquire(key, { holderId: 'other', leaseMs: LEASE.long })
        const damage = await corruptRecord(store, key)
        const checks: Array<[string, () => Promise<unknown>]> = [
          ['get', () => store.get(key)],
          ['acquire', () => store.acquire(key, { holderId: 'h', leaseMs: LEASE.long })],
          ['claimCreation', () => store.claimCreation(key, other.lease)],
          ['setSandbox', () => store.setSandbox(key, lease, mapping('sbx-2', 'sbx-1'))],
          [
            'release',
            () =>
              store.release(key, lease, {
                turnEndedAt: Date.now(),
                manifest: manifestFor('sbx-1'),
                stateIfLast: 'paused',
              }),
          ],
          ['setState', () => store.setState(key, 'paused')],
          ['list', () => store.list(key.tenant)],
        ]
        for (const [method, call] of checks) {
          const error = await expectCode(call(), 'STORE_CORRUPT')
          expect(error.message, method).toContain(damage.location)
          expect(await damage.isUntouched(), `${method} changed the corrupt record`).toBe(true)
        }
        // The documented way out: delete the session, then it starts over.
        expect(await store.delete(key)).toBe(true)
        expect(await store.get(key)).toBeNull()
      })
    })
  }
}
