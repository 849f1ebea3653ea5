// The E2B SDK contract: every call sandkeep relies on, through the unmodified SDK, for the latest e2b and
// for 2.50 (the last release on the old `POST /sandboxes` and `/sandboxes/{id}/connect` paths).
import { type CommandExitError, Sandbox as SandboxLatest } from 'e2b'
import { Sandbox as Sandbox250 } from 'e2b-2-50'
import { describe, expect, it } from 'vitest'
import { useTestHost, waitUntil } from './helpers.js'

const sdks = [
  { name: 'e2b latest', Sandbox: SandboxLatest as typeof SandboxLatest },
  { name: 'e2b 2.50 (old paths)', Sandbox: Sandbox250 as unknown as typeof SandboxLatest },
]

describe.each(sdks)('contract: $name', ({ Sandbox }) => {
  const t = useTestHost()
  const tag = `contract-${Math.random().toString(36).slice(2, 8)}`

  function create(options: Parameters<typeof Sandbox.create>[0] = {}) {
    return Sandbox.create({ ...t.opts, ...(options as object) })
  }

  it('create keeps metadata and envs; getInfo reports them', async () => {
    const sandbox = await create({
      metadata: { tag, role: 'info' },
      envs: { GREETING: 'hi there' },
      timeoutMs: 120_000,
    })
    const info = await sandbox.getInfo()
    expect(info.sandboxId).toBe(sandbox.sandboxId)
    expect(info.templateId).toBe('base')
    expect(info.metadata).toEqual({ tag, role: 'info' })
    expect(info.state).toBe('running')
    expect(info.endAt.getTime() - info.startedAt.getTime()).toBeGreaterThan(100_000)
    expect((await sandbox.commands.run('echo $GREETING')).stdout).toBe('hi there\n')
    expect((await sandbox.commands.run('echo $GREETING-$X', { envs: { X: 'y' } })).stdout).toBe(
      'hi there-y\n',
    )
  })

  it('list filters by metadata and state, and pages', async () => {
    const a = await create({ metadata: { tag, role: 'list' } })
    const b = await create({ metadata: { tag, role: 'list' } })
    const c = await create({ metadata: { tag, role: 'list' } })
    await c.pause()
    const running = await Sandbox.list({
      ...t.opts,
      query: { metadata: { tag, role: 'list' }, state: ['running'] },
    }).nextItems()
    expect(running.map((item) => item.sandboxId).sort()).toEqual([a.sandboxId, b.sandboxId].sort())
    const paused = await Sandbox.list({
      ...t.opts,
      query: { metadata: { tag, role: 'list' }, state: ['paused'] },
    }).nextItems()
    expect(paused.map((item) => item.sandboxId)).toEqual([c.sandboxId])
    expect(paused[0]?.state).toBe('paused')
    const pager = Sandbox.list({
      ...t.opts,
      limit: 1,
      query: { metadata: { tag, role: 'list' }, state: ['running', 'paused'] },
    })
    const seen: string[] = []
    while (pager.hasNext) {
      const items = await pager.nextItems()
      expect(items.length).toBeLessThanOrEqual(1)
      seen.push(...items.map((item) => item.sandboxId))
    }
    expect(seen.sort()).toEqual([a.sandboxId, b.sandboxId, c.sandboxId].sort())
  })

  it('setTimeout moves endAt; pause twice and kill twice answer like E2B; isRunning follows', async () => {
    const sandbox = await create()
    await sandbox.setTimeout(30_000)
    const info = await sandbox.getInfo()
    expect(info.endAt.getTime() - Date.now()).toBeLessThan(31_000)
    expect(info.endAt.getTime() - Date.now()).toBeGreaterThan(20_000)
    expect(await sandbox.isRunning()).toBe(true)
    expect(await Sandbox.pause(sandbox.sandboxId, t.opts)).toBe(true)
    expect(await Sandbox.pause(sandbox.sandboxId, t.opts)).toBe(false)
    expect(await sandbox.isRunning()).toBe(false)
    const again = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect(await again.isRunning()).toBe(true)
    expect(await again.kill()).toBe(true)
    expect(await Sandbox.kill(sandbox.sandboxId, t.opts)).toBe(false)
    expect(await again.isRunning()).toBe(false)
    await expect(Sandbox.getInfo(sandbox.sandboxId, t.opts)).rejects.toThrow(/not found/i)
    await expect(Sandbox.connect(sandbox.sandboxId, t.opts)).rejects.toMatchObject({
      name: 'SandboxNotFoundError',
    })
  })

  it('commands.run streams stdout/stderr to callbacks and reports exit codes', async () => {
    const sandbox = await create()
    const out: string[] = []
    const err: string[] = []
    const result = await sandbox.commands.run('echo one; sleep 0.1; echo two; echo oops >&2', {
      onStdout: (data) => {
        out.push(data)
      },
      onStderr: (data) => {
        err.push(data)
      },
    })
    expect(result.exitCode).toBe(0)
    expect(out.join('')).toBe('one\ntwo\n')
    expect(err.join('')).toBe('oops\n')
    expect(result.stderr).toBe('oops\n')
    const failed = await sandbox.commands.run('exit 3').catch((error: unknown) => error)
    expect(failed).toBeInstanceOf(Error)
    expect((failed as CommandExitError).exitCode).toBe(3)
    expect((await sandbox.commands.run('pwd', { cwd: '/tmp' })).stdout).toBe('/tmp\n')
  })

  it('background commands: stdin, list, connect, kill', async () => {
    const sandbox = await create()
    const handle = await sandbox.commands.run('cat', { background: true, stdin: true })
    expect(handle.pid).toBeGreaterThan(0)
    const listed = await sandbox.commands.list()
    expect(listed.map((process) => process.pid)).toContain(handle.pid)
    await sandbox.commands.sendStdin(handle.pid, 'echo me\n')
    await sandbox.commands.closeStdin(handle.pid)
    const done = await handle.wait()
    expect(done.stdout).toBe('echo me\n')

    const sleeper = await sandbox.commands.run(
      'for i in 1 2 3 4 5 6 7 8 9 10; do echo tick $i; sleep 0.2; done; sleep 60',
      {
        background: true,
        timeoutMs: 0,
      },
    )
    await sleeper.disconnect()
    const seen: string[] = []
    const reattached = await sandbox.commands.connect(sleeper.pid, {
      onStdout: (data) => void seen.push(data),
      timeoutMs: 0,
    })
    await waitUntil(() => seen.join('').includes('tick'))
    expect(await sandbox.commands.kill(sleeper.pid)).toBe(true)
    await expect(reattached.wait()).rejects.toBeInstanceOf(Error)
    expect(await sandbox.commands.kill(sleeper.pid)).toBe(false)
    expect((await sandbox.commands.list()).map((process) => process.pid)).not.toContain(sleeper.pid)
  })

  it('files: write, read, list, exists, getInfo, rename, remove, makeDir, multiple files', async () => {
    const sandbox = await create()
    const written = await sandbox.files.write('/home/user/dir/a.txt', 'alpha')
    expect(written.path).toBe('/home/user/dir/a.txt')
    expect(await sandbox.files.read('/home/user/dir/a.txt')).toBe('alpha')
    const bytes = await sandbox.files.read('dir/a.txt', { format: 'bytes' })
    expect(Buffer.from(bytes).toString()).toBe('alpha')
    await sandbox.files.write([
      { path: '/home/user/multi/one.txt', data: '1' },
      { path: '/home/user/multi/two.txt', data: '22' },
    ])
    const entries = await sandbox.files.list('/home/user/multi')
    expect(entries.map((entry) => entry.name).sort()).toEqual(['one.txt', 'two.txt'])
    expect(entries.find((entry) => entry.name === 'two.txt')?.size).toBe(2)
    const deep = await sandbox.files.list('/home/user', { depth: 2 })
    expect(deep.map((entry) => entry.path)).toContain('/home/user/multi/one.txt')
    expect(await sandbox.files.exists('/home/user/dir/a.txt')).toBe(true)
    expect(await sandbox.files.exists('/home/user/nope.txt')).toBe(false)
    const info = await sandbox.files.getInfo('/home/user/dir')
    expect(info.type).toBe('dir')
    expect(await sandbox.files.makeDir('/home/user/newdir/inner')).toBe(true)
    expect(await sandbox.files.makeDir('/home/user/newdir/inner')).toBe(false)
    await sandbox.files.rename('/home/user/dir/a.txt', '/home/user/newdir/b.txt')
    expect(await sandbox.files.exists('/home/user/dir/a.txt')).toBe(false)
    expect(await sandbox.files.read('/home/user/newdir/b.txt')).toBe('alpha')
    await sandbox.files.remove('/home/user/newdir')
    expect(await sandbox.files.exists('/home/user/newdir')).toBe(false)
    await expect(sandbox.files.read('/home/user/missing.txt')).rejects.toMatchObject({
      name: 'FileNotFoundError',
    })
    expect((await sandbox.commands.run('cat /home/user/multi/two.txt')).stdout).toBe('22')
    const empty = await sandbox.files.write('/home/user/empty.txt', '')
    expect(empty.name).toBe('empty.txt')
    expect(await sandbox.files.read('/home/user/empty.txt')).toBe('')
  })

  it('files.watchDir reports created files', async () => {
    const sandbox = await create()
    await sandbox.files.makeDir('/home/user/watched')
    const events: Array<{ name: string; type: string }> = []
    const watcher = await sandbox.files.watchDir('/home/user/watched', (event) => {
      events.push({ name: event.name, type: String(event.type) })
    })
    await sandbox.commands.run('echo x > /home/user/watched/new.txt')
    await waitUntil(() => events.some((event) => event.name === 'new.txt'))
    await watcher.stop()
    expect(events.find((event) => event.name === 'new.txt')?.type).toMatch(/create|write/)
  })
})

describe('contract: latest-only options', () => {
  const t = useTestHost()

  it('gzip upload and download round-trip', async () => {
    const sandbox = await SandboxLatest.create(t.opts)
    try {
      const text = 'zip '.repeat(1000)
      await sandbox.files.write('/home/user/z.txt', text, { gzip: true })
      expect(await sandbox.files.read('/home/user/z.txt', { gzip: true })).toBe(text)
      await sandbox.files.write('/home/user/o.txt', 'octet', { useOctetStream: true })
      expect(await sandbox.files.read('/home/user/o.txt')).toBe('octet')
    } finally {
      await sandbox.kill()
    }
  })

  it('timeout kills a sandbox, or pauses it with onTimeout pause, and autoResume wakes it', async () => {
    const killed = await SandboxLatest.create({ ...t.opts, timeoutMs: 1_000 })
    const paused = await SandboxLatest.create({
      ...t.opts,
      timeoutMs: 1_000,
      lifecycle: { onTimeout: 'pause', autoResume: true },
    })
    await paused.files.write('/home/user/keep.txt', 'still here')
    await waitUntil(() => t.host.getSandbox(killed.sandboxId) === undefined, 15_000)
    await waitUntil(() => t.host.getSandbox(paused.sandboxId)?.state === 'paused', 15_000)
    expect(await SandboxLatest.kill(killed.sandboxId, t.opts)).toBe(false)
    // autoResume: envd traffic to the paused sandbox resumes it.
    expect(await paused.files.read('/home/user/keep.txt')).toBe('still here')
    expect(t.host.getSandbox(paused.sandboxId)?.state).toBe('running')
    await paused.kill()
  })

  it('delivers all output of a command, and does not wait for a grandchild that keeps the pipes open', async () => {
    const sandbox = await SandboxLatest.create(t.opts)
    try {
      const big = await sandbox.commands.run('seq 1 200000')
      expect(big.stdout.split('\n').filter(Boolean)).toHaveLength(200000)
      expect(big.stdout.endsWith('200000\n')).toBe(true)
      // The grandchild keeps the pipes open for 300 s, far past the test's timeout: the command has to end
      // without it, and the grandchild is still there afterwards (an event, not a bound on the time taken).
      const detached = await sandbox.commands.run('sleep 300 & echo $!')
      const grandchild = detached.stdout.trim()
      expect(grandchild).toMatch(/^\d+$/)
      expect((await sandbox.commands.run(`kill -0 ${grandchild} && echo alive`)).stdout).toBe('alive\n')
    } finally {
      await sandbox.kill()
    }
  })

  it('kills a command when its timeoutMs (Connect-Timeout-Ms) runs out', async () => {
    const sandbox = await SandboxLatest.create(t.opts)
    try {
      await expect(sandbox.commands.run('sleep 30', { timeoutMs: 700 })).rejects.toMatchObject({
        name: 'TimeoutError',
      })
      await t.host.events.waitFor('process-end', (event) => event.sandboxId === sandbox.sandboxId, 10_000)
      expect(await sandbox.commands.list()).toEqual([])
      expect(t.host.events.list({ type: 'process-timeout', sandboxId: sandbox.sandboxId })).toHaveLength(1)
    } finally {
      await sandbox.kill()
    }
  })

  it('sends keepalives at the requested interval and always ends the stream with an end-stream frame', async () => {
    const sandbox = await SandboxLatest.create(t.opts)
    try {
      const token = (sandbox as unknown as { envdAccessToken: string }).envdAccessToken
      const message = Buffer.from(
        JSON.stringify({ process: { cmd: '/bin/bash', args: ['-c', 'sleep 2.3; echo done'] } }),
      )
      const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), message])
      frame.writeUInt32BE(message.length, 1)
      const response = await fetch(`${t.host.sandboxUrl}/process.Process/Start`, {
        method: 'POST',
        headers: {
          'content-type': 'application/connect+json',
          'connect-protocol-version': '1',
          'keepalive-ping-interval': '1',
          'e2b-sandbox-id': sandbox.sandboxId,
          'e2b-sandbox-port': '49983',
          'x-access-token': token,
        },
        body: frame,
      })
      const body = Buffer.from(await response.arrayBuffer())
      const frames: Array<{ flags: number; json: Record<string, unknown> }> = []
      for (let offset = 0; offset < body.length; ) {
        const length = body.readUInt32BE(offset + 1)
        frames.push({
          flags: body[offset] ?? 0,
          json: JSON.parse(body.subarray(offset + 5, offset + 5 + length).toString()),
        })
        offset += 5 + length
      }
      const events = frames
        .filter((f) => f.flags === 0)
        .map((f) => Object.keys((f.json.event ?? {}) as object)[0])
      expect(events[0]).toBe('start')
      expect(events.filter((name) => name === 'keepalive').length).toBeGreaterThanOrEqual(2)
      expect(events.at(-1)).toBe('end')
      expect(frames.at(-1)).toEqual({ flags: 2, json: {} })
    } finally {
      await sandbox.kill()
    }
  })

  it('without autoResume, envd traffic to a paused sandbox is refused', async () => {
    const sandbox = await SandboxLatest.create(t.opts)
    await sandbox.pause()
    await expect(sandbox.commands.run('true')).rejects.toThrow()
    expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('paused')
    await sandbox.kill()
  })
})
