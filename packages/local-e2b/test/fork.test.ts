// fork through the unmodified e2b SDK: `sandbox.fork({ count })` and `Sandbox.fork(id)` freeze the source once
// for a copy of its disk and start `count` new sandboxes from it, cold; the source goes on with its processes,
// its id and its timeout. The count is bounded as E2B bounds it, and the host's sandbox limit applies per fork.
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { RateLimitError, Sandbox, SandboxError, SandboxNotFoundError } from 'e2b'
import { afterEach, describe, expect, it } from 'vitest'
import { rejection, startTestHost, stopTestHost, useTestHost } from './helpers.js'

describe('fork', () => {
  const t = useTestHost()
  const created: string[] = []
  afterEach(async () => {
    for (const id of created.splice(0)) await Sandbox.kill(id, t.opts).catch(() => {})
  })
  async function create() {
    const sandbox = await Sandbox.create({ ...t.opts, timeoutMs: 120_000 })
    created.push(sandbox.sandboxId)
    return sandbox
  }
  function keep(results: Array<Sandbox | Error>): Sandbox[] {
    const sandboxes = results.filter((result): result is Sandbox => result instanceof Sandbox)
    created.push(...sandboxes.map((sandbox) => sandbox.sandboxId))
    return sandboxes
  }

  it('fork({ count: 2 }) starts two sandboxes with the files, cold and independent; the source goes on', async () => {
    const source = await create()
    await source.files.write('/home/user/state.txt', 'state before fork')
    await source.commands.run('echo from-a-process > /tmp/written.txt')
    const sleeper = await source.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    const { endAt } = await source.getInfo()

    const results = await source.fork({ count: 2, timeoutMs: 60_000 })
    expect(results).toHaveLength(2)
    const forks = keep(results)
    expect(forks).toHaveLength(2)
    const ids = new Set(forks.map((fork) => fork.sandboxId))
    expect(ids.size).toBe(2)
    expect(ids.has(source.sandboxId)).toBe(false)

    for (const fork of forks) {
      expect(await fork.isRunning()).toBe(true)
      expect(await fork.files.read('/home/user/state.txt')).toBe('state before fork')
      expect(await fork.files.read('/tmp/written.txt')).toBe('from-a-process\n')
      // Memory is not kept: the source's process does not run in a fork.
      expect(await fork.commands.list()).toEqual([])
    }
    await forks[0]?.files.write('/home/user/state.txt', 'modified in the first fork')
    expect(await forks[1]?.files.read('/home/user/state.txt')).toBe('state before fork')
    expect(await source.files.read('/home/user/state.txt')).toBe('state before fork')

    // The source was frozen once for one copy, and goes on with its process, id and timeout.
    const events = t.host.events.list({ type: 'sandbox-fork', sandboxId: source.sandboxId })
    expect(events).toHaveLength(1)
    expect(events[0]?.detail.frozenMs).toBeGreaterThan(0)
    expect(await source.isRunning()).toBe(true)
    expect((await source.commands.list()).map((process) => process.pid)).toContain(sleeper.pid)
    expect((await source.getInfo()).endAt).toEqual(endAt)
    expect(t.host.getSandbox(source.sandboxId)?.pauseCount).toBe(0)
  })

  it('Sandbox.fork(id) without a timeout gives the fork E2B’s 15 s', async () => {
    const source = await create()
    const [fork] = keep(await Sandbox.fork(source.sandboxId, t.opts))
    expect(fork).toBeInstanceOf(Sandbox)
    const info = await (fork as Sandbox).getInfo()
    expect(info.endAt.getTime() - info.startedAt.getTime()).toBe(15_000)
    expect(info.templateId).toBe('base')
  })

  it('a paused sandbox cannot be forked (409) and a killed one is not found', async () => {
    const sandbox = await create()
    await sandbox.pause()
    const paused = await rejection(sandbox.fork())
    expect(paused).toBeInstanceOf(SandboxError)
    expect(paused.statusCode).toBe(409)
    await sandbox.kill()
    await expect(sandbox.fork()).rejects.toBeInstanceOf(SandboxNotFoundError)
  })
})

describe('fork bounds', () => {
  it('count is 1 to 100 and below maxSandboxes; a fork past the running limit fails on its own with 429', async () => {
    const t = await startTestHost({ maxSandboxes: 3 })
    try {
      const source = await Sandbox.create(t.opts)
      for (const count of [0, 101, 3]) {
        const refused = await rejection(source.fork({ count }))
        expect(refused).toBeInstanceOf(SandboxError)
        expect(refused.statusCode).toBe(400)
      }
      await Sandbox.create(t.opts)
      // Two slots are taken, one is free: the first fork starts, the second gets the host's 429.
      const [first, second] = await source.fork({ count: 2, timeoutMs: 30_000 })
      expect(first).toBeInstanceOf(Sandbox)
      expect(second).toBeInstanceOf(RateLimitError)
      expect(t.host.listSandboxes()).toHaveLength(3)
      // The refused fork left nothing behind: three sandboxes' directories (and images), no copy in progress.
      const sandboxes = readdirSync(join(t.host.stateDir, 'sandboxes'))
      const live = t.host.listSandboxes().map((view) => view.sandboxId)
      expect(sandboxes.filter((name) => !name.endsWith('.img')).sort()).toEqual([...live].sort())
      // No copy in progress, and the fork's capture holds no blob once the forks were made.
      const snapshots = join(t.host.stateDir, 'snapshots')
      expect(
        readdirSync(snapshots)
          .filter((name) => name !== 'index.json')
          .sort(),
      ).toEqual(['blobs', 'manifests'])
      expect(readdirSync(join(snapshots, 'manifests'))).toEqual([])
      const blobs = readdirSync(join(snapshots, 'blobs')).flatMap((dir) =>
        readdirSync(join(snapshots, 'blobs', dir)),
      )
      expect(blobs).toEqual([])
    } finally {
      await stopTestHost(t)
    }
  })
})
