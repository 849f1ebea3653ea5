// Snapshots against a real local-e2b host through the unmodified SDK, beyond the conformance suite: the
// 404 of a create from a deleted snapshot, the name-prefix filter E2B's API does not have, the platform's
// refusals (409, 429) as retryable, a full snapshot quota (507) as QUOTA_EXCEEDED, and bad input refused before any request.
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { Sandbox } from 'e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createE2BProvider } from '../src/index.js'

const connectionOf = (host: LocalE2BHost) => ({
  apiKey: host.apiKey,
  apiUrl: host.apiUrl,
  sandboxUrl: host.sandboxUrl,
})
const providerOn = (host: LocalE2BHost) =>
  createE2BProvider({ ...connectionOf(host), snapshots: { keepsMemory: false } })

describe('E2B provider snapshots on local-e2b', () => {
  let host: LocalE2BHost
  const created: string[] = []
  beforeAll(async () => {
    host = await startLocalE2B({ logger: () => {} })
  })
  afterAll(async () => {
    const provider = providerOn(host)
    for (const id of created) await provider.kill(id).catch(() => false)
    await host.close()
  })
  const source = async () => {
    const sandbox = await providerOn(host).create({ metadata: {} })
    created.push(sandbox.id)
    return sandbox
  }

  it("a create from a deleted snapshot (E2B's 404 template not found) is SNAPSHOT_NOT_FOUND", async () => {
    const provider = providerOn(host)
    const sandbox = await source()
    const { snapshotId } = await provider.createSnapshot!(sandbox.id)
    expect(await provider.deleteSnapshot!(snapshotId)).toBe(true)
    const error = await provider.createFromSnapshot!(snapshotId, { metadata: {} }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'SNAPSHOT_NOT_FOUND', retryable: false })
    expect((error as Error).message).toContain(snapshotId)
    expect((error as { cause?: { statusCode?: number; message?: string } }).cause).toMatchObject({
      statusCode: 404,
      message: expect.stringContaining('not found'),
    })
  })

  it('a sandbox from a snapshot is a handle like create gives, with the options create takes', async () => {
    const provider = providerOn(host)
    const sandbox = await source()
    await sandbox.writeFile('/home/user/kept.txt', 'kept')
    const { snapshotId } = await provider.createSnapshot!(sandbox.id, { name: 'handle-check' })
    const copy = await provider.createFromSnapshot!(snapshotId, {
      metadata: { 'sandkeep.session': 'copy' },
      envs: { GREETING: 'from the copy' },
      timeoutMs: 120_000,
    })
    created.push(copy.id)
    expect(copy.native).toBeInstanceOf(Sandbox)
    expect(await copy.native.getInfo()).toMatchObject({
      allowInternetAccess: false,
      metadata: { 'sandkeep.session': 'copy' },
    })
    expect((await copy.runCommand('echo $GREETING; cat /home/user/kept.txt')).stdout).toBe(
      'from the copy\nkept',
    )
    expect((await copy.runCode('6 * 7')).text).toBe('42')
    expect(copy.portEndpoint?.(8000).headers['E2b-Sandbox-Id']).toBe(copy.id)
    await provider.deleteSnapshot!(snapshotId)
  })

  it("listSnapshots' namePrefix matches the names' base (after the namespace, before a tag), across pages", async () => {
    const provider = providerOn(host)
    const sandbox = await source()
    const prefix = `lp${Date.now().toString(36)}`
    const alpha = await provider.createSnapshot!(sandbox.id, { name: `${prefix}-alpha` })
    const beta = await provider.createSnapshot!(sandbox.id, { name: `${prefix}-beta` })
    // A tag is E2B's, not sandkeep's (a sandkeep name has none): taken through the SDK.
    const tagged = await Sandbox.createSnapshot(sandbox.id, {
      ...connectionOf(host),
      name: `${prefix}-gamma:v1`,
    })
    const other = await provider.createSnapshot!(sandbox.id, { name: `x${prefix}-other` })
    const unnamed = await provider.createSnapshot!(sandbox.id)
    const mine = [alpha.snapshotId, beta.snapshotId, tagged.snapshotId, other.snapshotId, unnamed.snapshotId]
    try {
      const found = await provider.listSnapshots!({ namePrefix: prefix })
      expect(found.snapshots.map((s) => s.snapshotId).sort()).toEqual(
        [alpha.snapshotId, beta.snapshotId, tagged.snapshotId].sort(),
      )
      expect(found.snapshots.find((s) => s.snapshotId === alpha.snapshotId)?.names).toEqual([
        `local/${prefix}-alpha`,
      ])
      expect((await provider.listSnapshots!({ namePrefix: `${prefix}-gamma` })).snapshots).toEqual([
        expect.objectContaining({ snapshotId: tagged.snapshotId }),
      ])
      // The namespace is not part of the name matched.
      expect((await provider.listSnapshots!({ namePrefix: 'local' })).snapshots).toEqual([])
      // Pages of one: each call reads E2B's pages until one matched, and its cursor goes on from there.
      const paged: string[] = []
      let cursor: string | undefined
      for (let call = 0; call < 20; call++) {
        const page = await provider.listSnapshots!({
          namePrefix: prefix,
          limit: 1,
          ...(cursor ? { cursor } : {}),
        })
        expect(page.snapshots.length).toBeLessThanOrEqual(1)
        paged.push(...page.snapshots.map((s) => s.snapshotId))
        cursor = page.cursor
        if (!cursor) break
      }
      expect(paged.sort()).toEqual(found.snapshots.map((s) => s.snapshotId).sort())
      // Without a prefix, one page of E2B's list as it is.
      const first = await provider.listSnapshots!({ limit: 2 })
      expect(first.snapshots).toHaveLength(2)
      expect(typeof first.cursor).toBe('string')
    } finally {
      for (const id of mine) await provider.deleteSnapshot!(id)
    }
  })

  it('a paused sandbox (409) is retryable SANDBOX_UNAVAILABLE; a killed one SANDBOX_NOT_FOUND', async () => {
    const provider = providerOn(host)
    const sandbox = await source()
    await provider.pause!(sandbox.id)
    await expect(provider.createSnapshot!(sandbox.id)).rejects.toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
      retryable: true,
    })
    await provider.kill(sandbox.id)
    await expect(provider.createSnapshot!(sandbox.id)).rejects.toMatchObject({ code: 'SANDBOX_NOT_FOUND' })
  })

  it('reports what each snapshot added to the host’s disk; content shared with an earlier snapshot counts once', async () => {
    const provider = providerOn(host)
    const sandbox = await source()
    await sandbox.writeFile('/home/user/big.bin', 'x'.repeat(256 * 1024))
    const first = await provider.createSnapshot!(sandbox.id)
    const second = await provider.createSnapshot!(sandbox.id)
    const events = host.events.list({ type: 'snapshot-create' })
    const bytesOf = (id: string) => events.find((e) => e.detail.snapshotId === id)?.detail.bytes
    expect(first.bytes).toBe(bytesOf(first.snapshotId))
    expect(first.bytes).toBeGreaterThanOrEqual(256 * 1024)
    // The unchanged file is stored once: the second snapshot adds only its manifest.
    expect(second.bytes).toBe(bytesOf(second.snapshotId))
    expect(second.bytes).toBeLessThan(64 * 1024)
  })

  it('a 429 that says the snapshot quota is full is QUOTA_EXCEEDED after one request, not retried on its Retry-After', async () => {
    const provider = providerOn(host)
    const sandbox = await source()
    const before = host.events.list({ type: 'fault-trigger' }).length
    host.faults.failNext('snapshot', {
      count: 4,
      status: 429,
      body: { code: 429, message: 'snapshot limit reached for this team' },
      headers: { 'retry-after': '1' },
      sandboxId: sandbox.id,
    })
    const refused = await provider.createSnapshot!(sandbox.id).catch((error: unknown) => error)
    expect(refused).toMatchObject({ code: 'QUOTA_EXCEEDED', retryable: false })
    // One request reached the host: the SDK's own 429 retry (3 more, 1 s apart) did not run.
    expect(host.events.list({ type: 'fault-trigger' }).length - before).toBe(1)
    host.faults.clear()
  })

  it('a plain rate limit (429 with Retry-After) is retryable SANDBOX_UNAVAILABLE carrying the wait', async () => {
    const provider = providerOn(host)
    const sandbox = await source()
    host.faults.failNext('snapshot', { status: 429, headers: { 'retry-after': '2' }, sandboxId: sandbox.id })
    const refused = await provider.createSnapshot!(sandbox.id).catch((error: unknown) => error)
    expect(refused).toMatchObject({ code: 'SANDBOX_UNAVAILABLE', retryable: true, retryAfterMs: 2000 })
    host.faults.clear()
  })

  it("past the host's snapshot quota (507) is QUOTA_EXCEEDED at once, not retried as a rate limit", async () => {
    const limited = await startLocalE2B({ logger: () => {}, maxSnapshots: 1 })
    try {
      const provider = providerOn(limited)
      const sandbox = await provider.create({ metadata: {} })
      await provider.createSnapshot!(sandbox.id)
      // Not retryable: the session manager gives up on it at once instead of backing off as from a rate limit.
      const refused = await provider.createSnapshot!(sandbox.id).catch((error: unknown) => error)
      expect(refused).toMatchObject({ code: 'QUOTA_EXCEEDED', retryable: false })
      expect((refused as Error).message).toContain('at most 1 snapshots')
    } finally {
      await limited.close()
    }
  })
})

describe('E2B provider snapshot options and input', () => {
  // Nothing listens on port 9: a call that sent a request would fail SANDBOX_UNAVAILABLE, not INVALID_ARGUMENT.
  const unreachable = createE2BProvider({
    apiKey: 'e2b_0',
    apiUrl: 'http://127.0.0.1:9',
    sandboxUrl: 'http://127.0.0.1:9',
  })

  it('refuses bad snapshot ids, names and list options before any request', async () => {
    await expect(unreachable.deleteSnapshot!('abc')).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' })
    const refused = [
      unreachable.createFromSnapshot!('', { metadata: {} }),
      unreachable.createFromSnapshot!('x'.repeat(257), { metadata: {} }),
      unreachable.createFromSnapshot!('a\u0007b', { metadata: {} }),
      unreachable.deleteSnapshot!(''),
      unreachable.createSnapshot!('', {}),
      unreachable.createSnapshot!('sandbox', { name: 'team/name' }),
      unreachable.createSnapshot!('sandbox', { name: 'name:tag' }),
      unreachable.listSnapshots!({ namePrefix: 'a b' }),
      unreachable.listSnapshots!({ limit: 0 }),
    ]
    for (const call of refused) await expect(call).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
  })

  it('declares files and memory by default, files only with keepsMemory: false, nothing with false', () => {
    expect(unreachable.snapshotKeeps).toEqual({ files: true, memory: true })
    expect(createE2BProvider({ snapshots: { keepsMemory: false } }).snapshotKeeps).toEqual({
      files: true,
      memory: false,
    })
    const without = createE2BProvider({ snapshots: false })
    for (const capability of [
      'snapshotKeeps',
      'createSnapshot',
      'createFromSnapshot',
      'deleteSnapshot',
      'listSnapshots',
    ] as const) {
      expect(without[capability]).toBeUndefined()
    }
    for (const snapshots of [true, null, { keepsMemory: 'no' }, { keepsFiles: false }]) {
      expect(() => createE2BProvider({ snapshots } as never)).toThrow(/option snapshots/)
    }
  })
})
