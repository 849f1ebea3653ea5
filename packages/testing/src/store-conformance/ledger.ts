// Store conformance area: ledger: the tenant's snapshot ledger the per-tenant checkpoint limits read
// (noteTenantSnapshot, forgetTenantSnapshots, readTenantSnapshotUsage). Skipped for a store without it.
import type { TenantSnapshot } from '@sandkeep/core/store'
import { defineArea, tenant } from './context.js'

/** Registers the ledger area of the SessionStore conformance suite. */
export const ledgerConformance = defineArea('ledger', ({ test, expect, open, expectCode }) => {
  test('totals a tenant’s snapshots in one read: a shared one once, unknown sizes apart, other tenants out', async () => {
    const store = await open()
    if (typeof store.noteTenantSnapshot !== 'function') return
    const owner = tenant()
    const other = tenant()
    expect(await store.readTenantSnapshotUsage!(owner)).toEqual({ snapshots: 0, bytes: 0, unknownBytes: 0 })
    await store.noteTenantSnapshot(owner, { snapshotId: 'snap-a', bytes: 1000 })
    await store.noteTenantSnapshot(owner, { snapshotId: 'snap-b', bytes: 24 })
    // Noted again (a checkpoint standing on the same snapshot): one entry, its bytes replaced.
    await store.noteTenantSnapshot(owner, { snapshotId: 'snap-b', bytes: 500 })
    await store.noteTenantSnapshot(owner, { snapshotId: 'snap-c', bytes: null })
    await store.noteTenantSnapshot(other, { snapshotId: 'snap-a', bytes: 7 })
    expect(await store.readTenantSnapshotUsage!(owner)).toEqual({
      snapshots: 3,
      bytes: 1500,
      unknownBytes: 1,
    })
    expect(await store.readTenantSnapshotUsage!(other)).toEqual({ snapshots: 1, bytes: 7, unknownBytes: 0 })
    await store.forgetTenantSnapshots!(owner, ['snap-a', 'snap-c', 'never-noted'])
    expect(await store.readTenantSnapshotUsage!(owner)).toEqual({ snapshots: 1, bytes: 500, unknownBytes: 0 })
    expect(await store.readTenantSnapshotUsage!(other)).toEqual({ snapshots: 1, bytes: 7, unknownBytes: 0 })
    await store.forgetTenantSnapshots!(owner, ['snap-b'])
    expect(await store.readTenantSnapshotUsage!(owner)).toEqual({ snapshots: 0, bytes: 0, unknownBytes: 0 })
  })

  test('refuses bad input with INVALID_ARGUMENT before writing anything', async () => {
    const store = await open()
    if (typeof store.noteTenantSnapshot !== 'function') return
    const owner = tenant()
    for (const bytes of [-1, 1.5, Number.NaN, '12', undefined]) {
      const snapshot = { snapshotId: 'snap-x', bytes } as unknown as TenantSnapshot
      await expectCode(store.noteTenantSnapshot(owner, snapshot), 'INVALID_ARGUMENT')
    }
    await expectCode(store.noteTenantSnapshot(owner, { snapshotId: '', bytes: 1 }), 'INVALID_ARGUMENT')
    await expectCode(
      store.noteTenantSnapshot('bad tenant\n', { snapshotId: 's', bytes: 1 }),
      'INVALID_ARGUMENT',
    )
    const notAList = 'snap-x' as unknown as string[]
    await expectCode(store.forgetTenantSnapshots!(owner, notAList), 'INVALID_ARGUMENT')
    expect(await store.readTenantSnapshotUsage!(owner)).toEqual({ snapshots: 0, bytes: 0, unknownBytes: 0 })
  })
})
