// Snapshots through the unmodified e2b SDK: createSnapshot keeps the files of a running sandbox (which goes on
// running), Sandbox.create(snapshotId) boots a new sandbox cold from them, and snapshots outlive their sandbox
// and the host, belong to the API key that made them, count against the host's limits and are deleted with
// their disk.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RateLimitError, Sandbox, SandboxError, SandboxNotFoundError } from 'e2b'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  COUNTING_SERVER,
  rejection,
  startTestHost,
  stopTestHost,
  type TestHost,
  useTestHost,
  waitUntil,
} from './helpers.js'

const newKey = () => `e2b_${randomBytes(20).toString('hex')}`

/** Every snapshot id a listing pages through. */
async function listedIds(options: Parameters<typeof Sandbox.listSnapshots>[0]): Promise<string[]> {
  const paginator = Sandbox.listSnapshots(options)
  const ids: string[] = []
  for (let page = 0; paginator.hasNext && page < 50; page++) {
    ids.push(...(await paginator.nextItems()).map((snapshot) => snapshot.snapshotId))
  }
  return ids
}

/**
 * The files under the host's snapshot directory (`index.json`, `manifests/<file>`, `blobs/<xx>/<hash>`), with
 * their modes; a directory is listed itself only when `withDirectories` (its mode checked by the caller).
 */
function snapshotFiles(
  host: TestHost['host'],
  withDirectories = false,
): Array<{ name: string; mode: number; directory?: true }> {
  const top = join(host.stateDir, 'snapshots')
  const found: Array<{ name: string; mode: number; directory?: true }> = []
  const walk = (relative: string) => {
    for (const name of readdirSync(join(top, relative))) {
      const path = relative ? `${relative}/${name}` : name
      const stats = statSync(join(top, path))
      // The content store's own directories stay; what they hold is what a snapshot takes.
      if (stats.isDirectory() && (path === 'blobs' || path === 'manifests' || path.startsWith('blobs/'))) {
        if (withDirectories) found.push({ name: path, mode: stats.mode & 0o777, directory: true })
        walk(path)
      } else found.push({ name: path, mode: stats.mode & 0o777 })
    }
  }
  walk('')
  return found
}

const get =
  'python3 -c "import urllib.request as u; print(u.urlopen(\'http://127.0.0.1:8080\').read().decode())"'

describe('snapshots', () => {
  const t = useTestHost()
  const created: string[] = []
  afterEach(async () => {
    for (const id of created.splice(0)) await Sandbox.kill(id, t.opts).catch(() => {})
    for (const id of await listedIds(t.opts)) await Sandbox.deleteSnapshot(id, t.opts)
  })
  async function create(template?: string) {
    const sandbox = template ? await Sandbox.create(template, t.opts) : await Sandbox.create(t.opts)
    created.push(sandbox.sandboxId)
    return sandbox
  }

  it('a sandbox created from a snapshot has the files written before it, not those after, and boots cold; the source runs on', async () => {
    const source = await create()
    await source.files.write('/home/user/before.txt', 'written before the snapshot')
    // Written by a process just before the snapshot, so still in the page cache when the copy starts.
    const digest = await source.commands.run(
      'head -c 3000000 /dev/urandom > /home/user/blob && echo in-tmp > /tmp/in-tmp.txt && sha256sum /home/user/blob',
    )
    await source.files.write('/home/user/server.py', COUNTING_SERVER)
    const server = await source.commands.run('python3 /home/user/server.py', {
      background: true,
      timeoutMs: 0,
    })
    await waitUntil(async () => (await source.commands.run(get).catch(() => undefined)) !== undefined, 15_000)

    const snapshot = await source.createSnapshot()
    expect(snapshot.snapshotId).toMatch(/^[a-z0-9]{20}:default$/)
    expect(snapshot.names).toEqual([])
    await source.files.write('/home/user/after.txt', 'written after the snapshot')

    // The source was frozen for the copy and let go: still running, same server, its memory intact.
    const event = t.host.events.list({ type: 'snapshot-create', sandboxId: source.sandboxId }).at(-1)
    expect(event?.detail.frozenMs).toBeGreaterThan(0)
    const view = t.host.getSandbox(source.sandboxId)
    expect(view?.state).toBe('running')
    expect(view?.frozen).toBe(false)
    expect(view?.pauseCount).toBe(0)
    expect(await source.isRunning()).toBe(true)
    expect((await source.commands.list()).map((process) => process.pid)).toContain(server.pid)
    expect((await source.commands.run(get)).stdout.trim()).toBe('2')

    const copy = await create(snapshot.snapshotId)
    expect(copy.sandboxId).not.toBe(source.sandboxId)
    expect(await copy.files.read('/home/user/before.txt')).toBe('written before the snapshot')
    expect(await copy.files.read('/tmp/in-tmp.txt')).toBe('in-tmp\n')
    expect((await copy.commands.run('sha256sum /home/user/blob')).stdout).toBe(digest.stdout)
    expect(await copy.files.exists('/home/user/after.txt')).toBe(false)
    // Memory is not kept: no process of the source runs in the copy.
    expect(await copy.commands.list()).toEqual([])
    const info = await copy.getInfo()
    expect(info.templateId).toBe(snapshot.snapshotId.split(':')[0])
    expect(info.state).toBe('running')
    expect((await copy.commands.run('whoami && touch /home/user/mine && echo ok')).stdout).toBe('user\nok\n')

    // The two are independent from now on.
    await copy.files.write('/home/user/before.txt', 'changed in the copy')
    expect(await source.files.read('/home/user/before.txt')).toBe('written before the snapshot')
    const restore = t.host.events.list({ type: 'snapshot-restore', sandboxId: copy.sandboxId })
    expect(restore).toHaveLength(1)
  })

  it('several sandboxes come from one snapshot, each with its own copy', async () => {
    const source = await create()
    await source.files.write('/home/user/shared.txt', 'shared')
    const { snapshotId } = await Sandbox.createSnapshot(source.sandboxId, t.opts)
    const first = await create(snapshotId)
    const second = await create(snapshotId)
    await first.files.write('/home/user/shared.txt', 'changed in the first')
    expect(await second.files.read('/home/user/shared.txt')).toBe('shared')
    expect(await first.files.read('/home/user/shared.txt')).toBe('changed in the first')
  })

  it('named snapshots: E2B ids and names, the same name replaces its build, list filters and pages', async () => {
    const source = await create()
    await source.files.write('/home/user/version.txt', 'one')
    const named = await source.createSnapshot({ name: 'base-env' })
    expect(named).toEqual({ snapshotId: 'local/base-env:default', names: ['local/base-env'] })
    await source.files.write('/home/user/version.txt', 'two')
    const again = await source.createSnapshot({ name: 'base-env' })
    expect(again.snapshotId).toBe(named.snapshotId)
    const unnamed = await source.createSnapshot()
    const tagged = await source.createSnapshot({ name: 'base-env:v1' })
    expect(tagged.snapshotId).toBe('local/base-env:v1')

    // The second build replaced the first: the bare name, the id and the namespaced name all give "two".
    for (const reference of ['base-env', named.snapshotId, 'local/base-env']) {
      const copy = await create(reference)
      expect(await copy.files.read('/home/user/version.txt')).toBe('two')
    }
    const all = await listedIds(t.opts)
    expect(all.sort()).toEqual([named.snapshotId, tagged.snapshotId, unnamed.snapshotId].sort())
    expect((await listedIds({ ...t.opts, name: 'base-env' })).sort()).toEqual(
      [named.snapshotId, tagged.snapshotId].sort(),
    )
    expect(await listedIds({ ...t.opts, name: 'base-env:v1' })).toEqual([tagged.snapshotId])
    expect(await listedIds({ ...t.opts, name: 'no-such-snapshot' })).toEqual([])

    // One per page: three pages, then no next token.
    const paginator = Sandbox.listSnapshots({ ...t.opts, limit: 1 })
    const paged: string[] = []
    while (paginator.hasNext && paged.length < 10) {
      const items = await paginator.nextItems()
      expect(items).toHaveLength(1)
      paged.push(...items.map((item) => item.snapshotId))
    }
    expect(paged.sort()).toEqual(all.sort())

    // A sandbox's own list holds only its snapshots.
    const other = await create()
    const mine = await other.createSnapshot()
    expect(await listedIds({ ...t.opts, sandboxId: other.sandboxId })).toEqual([mine.snapshotId])
    const ownPage = await other.listSnapshots().nextItems()
    expect(ownPage.map((item) => item.snapshotId)).toEqual([mine.snapshotId])

    const foreign = await rejection(source.createSnapshot({ name: 'someone-else/base-env' }))
    expect(foreign).toBeInstanceOf(SandboxError)
    expect(foreign.statusCode).toBe(400)
  })

  it('a deleted snapshot: its disk is freed, create answers E2B not-found, a second delete is false', async () => {
    const source = await create()
    await source.files.write('/home/user/kept.txt', 'kept')
    const { snapshotId } = await source.createSnapshot()
    const before = await create(snapshotId)
    expect(snapshotFiles(t.host).filter((file) => file.name.startsWith('manifests/'))).toHaveLength(1)
    expect(snapshotFiles(t.host).some((file) => file.name.startsWith('blobs/'))).toBe(true)

    expect(await Sandbox.deleteSnapshot(snapshotId, t.opts)).toBe(true)
    expect(snapshotFiles(t.host).map((file) => file.name)).toEqual(['index.json'])
    expect(await Sandbox.deleteSnapshot(snapshotId, t.opts)).toBe(false)
    expect(await listedIds(t.opts)).not.toContain(snapshotId)
    const missing = await rejection(Sandbox.create(snapshotId, t.opts))
    expect(missing).toBeInstanceOf(SandboxError)
    expect(missing.statusCode).toBe(404)
    expect(missing.message).toContain('not found')
    // A sandbox made from it before keeps its own copy.
    expect(await before.files.read('/home/user/kept.txt')).toBe('kept')
  })

  it('a paused sandbox cannot be snapshotted (409) and a killed one is not found', async () => {
    const sandbox = await create()
    await sandbox.pause()
    const paused = await rejection(sandbox.createSnapshot())
    expect(paused).toBeInstanceOf(SandboxError)
    expect(paused.statusCode).toBe(409)
    await sandbox.kill()
    await expect(sandbox.createSnapshot()).rejects.toBeInstanceOf(SandboxNotFoundError)
  })

  it('keeps its files private to the host user: directories 0700, index, manifests and blobs 0600', async () => {
    const source = await create()
    await source.files.write('/home/user/note.txt', 'private')
    await source.createSnapshot()
    expect(statSync(join(t.host.stateDir, 'snapshots')).mode & 0o777).toBe(0o700)
    const files = snapshotFiles(t.host, true)
    expect(files.filter((file) => !file.directory).length).toBeGreaterThanOrEqual(3)
    for (const file of files) expect(file).toEqual({ ...file, mode: file.directory ? 0o700 : 0o600 })
  })
})

describe('snapshot limits', () => {
  it('past maxSnapshots one more answers 507 quota exceeded (not a rate limit) and keeps nothing, until one is deleted', async () => {
    const t = await startTestHost({ maxSnapshots: 2 })
    try {
      const source = await Sandbox.create(t.opts)
      const first = await source.createSnapshot()
      await source.createSnapshot()
      const refused = await rejection(source.createSnapshot())
      expect(refused).toBeInstanceOf(SandboxError)
      expect(refused).not.toBeInstanceOf(RateLimitError)
      expect(refused.message).toMatch(/^507: snapshot quota exceeded: .*at most 2 snapshots/)
      expect(await listedIds(t.opts)).toHaveLength(2)
      expect(snapshotFiles(t.host).filter((file) => file.name.startsWith('manifests/'))).toHaveLength(2)
      await Sandbox.deleteSnapshot(first.snapshotId, t.opts)
      await source.createSnapshot()
      expect(await listedIds(t.opts)).toHaveLength(2)
    } finally {
      await stopTestHost(t)
    }
  })

  it('past maxSnapshotBytes a snapshot answers 507 quota exceeded and keeps nothing', async () => {
    const t = await startTestHost({ maxSnapshotBytes: 64 * 1024 })
    try {
      const source = await Sandbox.create(t.opts)
      await source.commands.run('head -c 262144 /dev/urandom > /home/user/big.bin')
      const refused = await rejection(source.createSnapshot())
      expect(refused).not.toBeInstanceOf(RateLimitError)
      expect(refused.message).toMatch(/^507: snapshot quota exceeded: this snapshot needs/)
      expect(await listedIds(t.opts)).toEqual([])
      expect(snapshotFiles(t.host).filter((file) => file.name !== 'index.json')).toEqual([])
      expect(await source.isRunning()).toBe(true)
    } finally {
      await stopTestHost(t)
    }
  })
})

describe('snapshots without disk images', () => {
  const t = useTestHost({ limits: { diskBytes: 0 } })

  it('keep the sandbox directory, with its owners, and a sandbox from one has the files', async () => {
    const source = await Sandbox.create(t.opts)
    await source.commands.run('mkdir -p /home/user/app && echo data > /home/user/app/data.txt')
    const { snapshotId } = await source.createSnapshot()
    expect(t.host.events.list({ type: 'snapshot-create' }).at(-1)?.detail.kind).toBe('content')
    for (const file of snapshotFiles(t.host, true)) expect(file.mode).toBe(file.directory ? 0o700 : 0o600)
    const copy = await Sandbox.create(snapshotId, t.opts)
    expect(await copy.files.read('/home/user/app/data.txt')).toBe('data\n')
    // Still the sandbox user's: it can change what it wrote before the snapshot.
    expect((await copy.commands.run('echo more >> /home/user/app/data.txt && echo ok')).stdout).toBe('ok\n')
    await Sandbox.deleteSnapshot(snapshotId, t.opts)
    expect(snapshotFiles(t.host).map((file) => file.name)).toEqual(['index.json'])
  })
})

describe('snapshots across hosts', () => {
  // Made in beforeAll, not while collecting: a run filtered to other tests skips afterAll and would leak it.
  let stateDir = ''
  const owner = newKey()
  beforeAll(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'sandkeep-snapshots-'))
  })
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }))
  let snapshotId = ''
  /** A new host on the state dir with the owner's key lists the snapshot, and a sandbox from it has the file. */
  async function expectOwnerFindsIt(): Promise<void> {
    const again = await startTestHost({ stateDir, apiKey: owner })
    try {
      expect(await listedIds(again.opts)).toEqual([snapshotId])
      const copy = await Sandbox.create(snapshotId, again.opts)
      expect(await copy.files.read('/home/user/note.txt')).toBe('survives')
    } finally {
      await stopTestHost(again)
    }
  }

  it('outlive their sandbox, the restart fault and a second host on the same state dir', async () => {
    const first = await startTestHost({ stateDir, apiKey: owner })
    try {
      const source = await Sandbox.create(first.opts)
      await source.files.write('/home/user/note.txt', 'survives')
      snapshotId = (await source.createSnapshot()).snapshotId
      await source.kill()
      await first.host.faults.restart()
      // The restart dropped every connection; let the client's pool see it before the next call.
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(await listedIds(first.opts)).toEqual([snapshotId])
      const copy = await Sandbox.create(snapshotId, first.opts)
      expect(await copy.files.read('/home/user/note.txt')).toBe('survives')
      await copy.kill()
    } finally {
      await stopTestHost(first)
    }
    await expectOwnerFindsIt()
  })

  it("another API key's snapshot is not found, listed or deleted", async () => {
    const stranger = await startTestHost({ stateDir, apiKey: newKey() })
    try {
      expect(await listedIds(stranger.opts)).toEqual([])
      const missing = await rejection(Sandbox.create(snapshotId, stranger.opts))
      expect(missing.statusCode).toBe(404)
      expect(await Sandbox.deleteSnapshot(snapshotId, stranger.opts)).toBe(false)
      const source = await Sandbox.create(stranger.opts)
      const own = await source.createSnapshot()
      expect(await listedIds(stranger.opts)).toEqual([own.snapshotId])
    } finally {
      await stopTestHost(stranger)
    }
    await expectOwnerFindsIt()
  })
})
