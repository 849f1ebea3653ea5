// Store conformance area: corrupt records: STORE_CORRUPT in every method, record left as is (needs
// options.corruptRecord, and options.corruptField for the table of forbidden values).

import type { SessionKey } from '@sandkeep/core'
import type { Lease, SessionStore } from '@sandkeep/core/store'
import {
  type CorruptibleRecordField,
  LEASE,
  manifestFor,
  mapping,
  newKey,
  type StoreConformanceContext,
} from './context.js'

/**
 * Values no store writes and the contract forbids, each one a record field could be damaged to. A store
 * that let any through would act on it (a sandbox id with a newline reaches the provider) or write on top
 * of it (a turn counted on a negative count) before anything noticed.
 */
const FORBIDDEN_VALUES: Array<[CorruptibleRecordField, string | number]> = [
  ['sandboxId', 'sbx-1\nsbx-2'],
  ['sandboxId', 'sbx-1\u0000'],
  ['sandboxId', 'sbx-\u2028'],
  ['sandboxId', ''],
  ['sandboxId', 's'.repeat(257)],
  ['providerId', 'e2b\r'],
  ['template', 'base\u0085'],
  ['turnCount', -1],
  ['turnCount', 1.5],
  ['turnCount', 2 ** 60],
  ['mappingToken', -3],
  ['runningSeconds', -0.5],
  ['pausedSeconds', -2],
  ['pausedAt', -1],
  ['lastTurnStartedAt', -1],
  // A pending restore names the snapshot the next turn creates from: one that does not parse must not be used.
  ['restore', 'rewound'],
]

/** The calls that read the record, each of which must refuse a corrupt one before writing. */
function recordReaders(
  store: SessionStore,
  key: SessionKey,
  lease: Lease,
  other: Lease,
): Array<[string, () => Promise<unknown>]> {
  return [
    ['get', () => store.get(key)],
    ['acquire', () => store.acquire(key, { holderId: 'h', leaseMs: LEASE.long })],
    ['claimCreation', () => store.claimCreation(key, other)],
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
}

/** Registers the corruption area of the SessionStore conformance suite. */
export function corruptionConformance(context: StoreConformanceContext): void {
  const { describe, test, expect } = context.api
  const { open, createSession, expectCode } = context
  const { corruptRecord, corruptField } = context.options
  if (!corruptRecord && !corruptField) return
  describe('corrupt records', () => {
    /** Every reader refuses the damaged record with STORE_CORRUPT naming it, and leaves the session as is. */
    const expectRefusedEverywhere = async (
      readers: Array<[string, () => Promise<unknown>]>,
      damage: { location: string; isUntouched: () => Promise<boolean> },
      what: string,
    ) => {
      for (const [method, call] of readers) {
        const error = await expectCode(call(), 'STORE_CORRUPT')
        expect(error.message, `${method} on ${what}`).toContain(damage.location)
        expect(await damage.isUntouched(), `${method} changed the session of ${what}`).toBe(true)
      }
    }

    if (corruptRecord) {
      test('refuses a corrupt record with STORE_CORRUPT naming it, in every method, and leaves it as is', async () => {
        const store = await open()
        const key = newKey()
        const { lease } = await createSession(store, key, 'sbx-1')
        const other = await store.acquire(key, { holderId: 'other', leaseMs: LEASE.long })
        const damage = await corruptRecord(store, key)
        await expectRefusedEverywhere(recordReaders(store, key, lease, other.lease), damage, 'the record')
        // The documented way out: delete the session, then it starts over.
        expect(await store.delete(key)).toBe(true)
        expect(await store.get(key)).toBeNull()
      })
    }

    if (corruptField) {
      test('refuses every value the contract forbids before writing: turn count, times and lease unchanged', async () => {
        const store = await open()
        for (const [field, value] of FORBIDDEN_VALUES) {
          const what = `${field} = ${JSON.stringify(value)}`
          const key = newKey()
          const { lease } = await createSession(store, key, 'sbx-1')
          const other = await store.acquire(key, { holderId: 'other', leaseMs: LEASE.long })
          const damage = await corruptField(store, key, field, value)
          await expectRefusedEverywhere(recordReaders(store, key, lease, other.lease), damage, what)
          // The journal is not the record: it stays readable, and delete still clears the session.
          expect(await store.readJournal(key), what).toEqual([])
          expect(await store.delete(key), what).toBe(true)
        }
      })
    }
  })
}
