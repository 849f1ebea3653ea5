// Places where the host answered differently from E2B, found by running E2B's own SDK tests against it;
// each test holds the host to what E2B (envd's source, the API) does.
import { FilesystemEventType, Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost, waitUntil } from './helpers.js'

describe('as E2B does it', () => {
  const t = useTestHost()

  it('list({ query: { startedAfter } }) includes a sandbox started at exactly that instant', async () => {
    const tag = `started-after-${Date.now()}`
    const sandbox = await Sandbox.create({ ...t.opts, metadata: { tag } })
    try {
      const { startedAt } = await sandbox.getInfo()
      const listed = await Sandbox.list({
        ...t.opts,
        query: { metadata: { tag }, startedAfter: startedAt },
      }).nextItems()
      expect(listed.map((entry) => entry.sandboxId)).toEqual([sandbox.sandboxId])
      const later = new Date(startedAt.getTime() + 1)
      const none = await Sandbox.list({
        ...t.opts,
        query: { metadata: { tag }, startedAfter: later },
      }).nextItems()
      expect(none).toEqual([])
    } finally {
      await sandbox.kill()
    }
  })

  it("watchDir sees files.write as envd's in-place write: write for an overwrite, create then write for a new file, no temp names", async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      await sandbox.files.makeDir('watched')
      await sandbox.files.write('watched/existing.txt', 'first')
      const events: Array<{ name: string; type: FilesystemEventType }> = []
      const handle = await sandbox.files.watchDir('watched', (event) => {
        events.push({ name: event.name, type: event.type })
      })
      await sandbox.files.write('watched/existing.txt', 'second')
      await sandbox.files.write('watched/new.txt', 'new')
      await waitUntil(() =>
        events.some((event) => event.name === 'new.txt' && event.type === FilesystemEventType.WRITE),
      )
      // Anything queued behind them has arrived by now.
      await new Promise((resolve) => setTimeout(resolve, 300))
      await handle.stop()
      expect(events).toEqual([
        { name: 'existing.txt', type: FilesystemEventType.WRITE },
        { name: 'new.txt', type: FilesystemEventType.CREATE },
        { name: 'new.txt', type: FilesystemEventType.WRITE },
      ])
    } finally {
      await sandbox.kill()
    }
  })

  it('getInfo of a symlink gives symlinkTarget as the absolute path it resolves to, as envd does', async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      await sandbox.files.write('target.txt', 'x')
      await sandbox.commands.run(
        'mkdir -p sub && ln -s target.txt link.txt && ln -s link.txt chain.txt && ln -s ../target.txt sub/up.txt && ln -s gone.txt dangling.txt && ln -s /usr/bin/env outside',
      )
      const target = '/home/user/target.txt'
      expect((await sandbox.files.getInfo('link.txt')).symlinkTarget).toBe(target)
      expect((await sandbox.files.getInfo('chain.txt')).symlinkTarget).toBe(target)
      expect((await sandbox.files.getInfo('sub/up.txt')).symlinkTarget).toBe(target)
      expect((await sandbox.files.getInfo('link.txt')).type).toBe('file')
      // envd gives the link's own path when the link does not resolve (Go's EvalSymlinks fails).
      expect((await sandbox.files.getInfo('dangling.txt')).symlinkTarget).toBe('/home/user/dangling.txt')
      expect((await sandbox.files.getInfo('outside')).symlinkTarget).toBe('/usr/bin/env')
      const listed = await sandbox.files.list('sub')
      expect(listed.map((entry) => entry.symlinkTarget)).toEqual([target])
    } finally {
      await sandbox.kill()
    }
  })

  it("files.remove of a path that does not exist succeeds quietly, as envd's os.RemoveAll", async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      await sandbox.files.remove('never-there.txt')
      await sandbox.files.remove('no-such-dir/never-there.txt')
      await sandbox.files.write('there.txt', 'x')
      await sandbox.files.remove('there.txt')
      expect(await sandbox.files.exists('there.txt')).toBe(false)
      // Paths outside the sandbox's files are still refused.
      await expect(sandbox.files.remove('/etc/passwd')).rejects.toMatchObject({
        name: 'InvalidArgumentError',
      })
    } finally {
      await sandbox.kill()
    }
  })

  it('files.write metadata is kept on the file as envd keeps it (user.e2b.* xattrs): stat, list, rename, overwrite', async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      const metadata = { author: 'mish', purpose: 'upload' }
      const written = await sandbox.files.write('meta.txt', 'content', { metadata })
      expect(written.metadata).toEqual(metadata)
      expect((await sandbox.files.getInfo('meta.txt')).metadata).toEqual(metadata)
      const inside = await sandbox.commands.run(
        `python3 -c "import os; print(sorted(os.listxattr('meta.txt')))"`,
      )
      expect(inside.stdout.trim()).toBe("['user.e2b.author', 'user.e2b.purpose']")
      await sandbox.files.write('meta.txt', 'second', { metadata: { stage: 'two' }, useOctetStream: true })
      expect((await sandbox.files.getInfo('meta.txt')).metadata).toEqual({ stage: 'two' })
      const renamed = await sandbox.files.rename('meta.txt', 'renamed.txt')
      expect(renamed.metadata).toEqual({ stage: 'two' })
      expect((await sandbox.files.list('.')).find((entry) => entry.name === 'renamed.txt')?.metadata).toEqual(
        {
          stage: 'two',
        },
      )
      await sandbox.files.write('renamed.txt', 'plain')
      expect((await sandbox.files.getInfo('renamed.txt')).metadata).toBeUndefined()
      await sandbox.commands.run(
        `python3 -c "import os; os.setxattr('renamed.txt', 'user.e2b.set', b'inside')"`,
      )
      expect((await sandbox.files.getInfo('renamed.txt')).metadata).toEqual({ set: 'inside' })
      // Refused before anything is written: envd's rules, past the SDK's own check.
      const token = (sandbox as unknown as { envdAccessToken: string }).envdAccessToken
      const refused = await fetch(`${t.host.sandboxUrl}/files?path=/home/user/refused.txt`, {
        method: 'POST',
        headers: {
          'content-type': 'application/octet-stream',
          'e2b-sandbox-id': sandbox.sandboxId,
          'e2b-sandbox-port': '49983',
          'x-access-token': token,
          'x-metadata-big': 'x'.repeat(5000),
        },
        body: 'x',
      })
      expect(refused.status).toBe(400)
      expect(await sandbox.files.exists('refused.txt')).toBe(false)
    } finally {
      await sandbox.kill()
    }
  })

  it("has the base template's `python` command (python3 under E2B's name)", async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      const result = await sandbox.commands.run('python -c "import sys; print(sys.version_info[0])"')
      expect(result.stdout).toBe('3\n')
    } finally {
      await sandbox.kill()
    }
  })
})
