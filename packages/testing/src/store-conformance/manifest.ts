// Store conformance area: the turn manifest on release: written, kept, cleared, conditional on the turn count.
import { defineArea, holder, LEASE, manifestFor, newKey } from './context.js'

/** Registers the manifest area of the SessionStore conformance suite. */
export const manifestConformance = defineArea(
  'release: manifest',
  ({ test, expect, open, createSession }) => {
    test('writes, keeps and clears the manifest, and never writes one for another sandbox', async () => {
      const store = await open()
      const key = newKey()
      const { lease } = await createSession(store, key, 'sbx-1')
      const manifest = manifestFor('sbx-1', 'one')
      const written = await store.release(key, lease, { turnEndedAt: Date.now(), manifest })
      expect(written.record?.manifest).toEqual(manifest)

      const kept = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      expect(kept.record?.manifest).toEqual(manifest)
      const keptRelease = await store.release(key, kept.lease, { turnEndedAt: Date.now() })
      expect(keptRelease.record?.manifest).toEqual(manifest)

      const stale = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const staleRelease = await store.release(key, stale.lease, {
        turnEndedAt: Date.now(),
        manifest: manifestFor('sbx-other', 'two'),
      })
      expect(staleRelease.record?.manifest).toEqual(manifest)

      const clearing = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const cleared = await store.release(key, clearing.lease, { turnEndedAt: Date.now(), manifest: null })
      expect(cleared.record?.manifest).toBeNull()
      expect((await store.get(key))?.manifest).toBeNull()
    })

    test('writes a manifest conditional on the turn count only while no other turn ended since', async () => {
      const store = await open()
      const key = newKey()
      const { lease } = await createSession(store, key, 'sbx-1')
      const first = manifestFor('sbx-1', 'one')
      await store.release(key, lease, { turnEndedAt: Date.now(), manifest: first })

      // A and B overlap; B began after A and ends first, so A's start-of-turn view is stale by A's end.
      const a = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const b = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      expect(a.record?.turnCount).toBe(1)
      const fromB = manifestFor('sbx-1', 'b')
      const bEnd = await store.release(key, b.lease, {
        turnEndedAt: Date.now(),
        manifest: fromB,
        manifestIfTurnCount: b.record!.turnCount,
      })
      expect(bEnd.record?.manifest).toEqual(fromB)
      const aEnd = await store.release(key, a.lease, {
        turnEndedAt: Date.now(),
        manifest: manifestFor('sbx-1', 'a'),
        manifestIfTurnCount: a.record!.turnCount,
      })
      // The rest of A's release still happened.
      expect(aEnd.last).toBe(true)
      expect(aEnd.record?.turnCount).toBe(3)
      expect(aEnd.record?.manifest).toEqual(fromB)
      expect((await store.get(key))?.manifest).toEqual(fromB)

      // Alone, the condition holds and the manifest is written.
      const c = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const fromC = manifestFor('sbx-1', 'c')
      const cEnd = await store.release(key, c.lease, {
        turnEndedAt: Date.now(),
        manifest: fromC,
        manifestIfTurnCount: 3,
      })
      expect(cEnd.record?.manifest).toEqual(fromC)
      // Clearing is never conditional.
      const d = await store.acquire(key, { holderId: holder(), leaseMs: LEASE.long })
      const dEnd = await store.release(key, d.lease, {
        turnEndedAt: Date.now(),
        manifest: null,
        manifestIfTurnCount: 0,
      })
      expect(dEnd.record?.manifest).toBeNull()
    })

    test("keeps the marker's file witnesses as written", async () => {
      const store = await open()
      const key = newKey()
      const { lease } = await createSession(store, key, 'sbx-1')
      const manifest = manifestFor('sbx-1', 'w')
      manifest.filesystem!.witnesses = [
        { path: 'report.md', sha256: 'a'.repeat(64) },
        { path: '/home/user/data/é.csv', sha256: '0123456789abcdef'.repeat(4) },
      ]
      const written = await store.release(key, lease, { turnEndedAt: Date.now(), manifest })
      expect(written.record?.manifest).toEqual(manifest)
      expect((await store.get(key))?.manifest).toEqual(manifest)
    })
  },
)
