// Pause keeps memory and processes; a paused sandbox uses no CPU; isolation holds; tokens and keys are
// checked; path escapes are refused; a restarted host finds its sandboxes (files yes, processes no).
import { Sandbox } from 'e2b'
import { afterEach, describe, expect, it } from 'vitest'
import { startLocalE2B } from '../src/index.js'
import { COUNTING_SERVER, startTestHost, useTestHost, waitUntil } from './helpers.js'

describe('lifecycle and isolation', () => {
  const t = useTestHost()
  const created: Sandbox[] = []
  afterEach(async () => {
    for (const sandbox of created.splice(0)) await Sandbox.kill(sandbox.sandboxId, t.opts).catch(() => {})
  })
  async function create(options: Parameters<typeof Sandbox.create>[0] = {}) {
    const sandbox = await Sandbox.create({ ...t.opts, ...(options as object) })
    created.push(sandbox)
    return sandbox
  }

  it('a background server, its memory and a file survive pause + connect with the same pid', async () => {
    const sandbox = await create()
    await sandbox.files.write('/home/user/server.py', COUNTING_SERVER)
    const server = await sandbox.commands.run('python3 /home/user/server.py', {
      background: true,
      timeoutMs: 0,
    })
    const get = () =>
      sandbox.commands.run(
        'python3 -c "import urllib.request as u; print(u.urlopen(\'http://127.0.0.1:8080\').read().decode())"',
      )
    await waitUntil(async () => (await get().catch(() => undefined)) !== undefined, 15_000)
    expect((await get()).stdout.trim()).toBe('2')
    await sandbox.files.write('/home/user/marker.txt', 'before pause')
    expect(await sandbox.pause()).toBe(true)
    const view = t.host.getSandbox(sandbox.sandboxId)
    expect(view?.state).toBe('paused')
    expect(view?.frozen).toBe(true)
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect((await resumed.commands.list()).map((process) => process.pid)).toContain(server.pid)
    expect(await resumed.files.read('/home/user/marker.txt')).toBe('before pause')
    // The counter lives in the server's memory: it continues, it does not restart at 1.
    expect(
      (
        await resumed.commands.run(
          'python3 -c "import urllib.request as u; print(u.urlopen(\'http://127.0.0.1:8080\').read().decode())"',
        )
      ).stdout.trim(),
    ).toBe('3')
    const after = t.host.getSandbox(sandbox.sandboxId)
    expect(after?.pauseCount).toBe(1)
    expect(after?.pauses[0]?.pauseMs).toBeGreaterThanOrEqual(0)
    expect(after?.pauses[0]?.resumeMs).toBeGreaterThanOrEqual(0)
    expect(after?.pauses[0]?.coldBoot).toBe(false)
  })

  it('a paused sandbox uses no CPU', async () => {
    const sandbox = await create()
    await sandbox.commands.run('sh -c "while :; do :; done"', { background: true, timeoutMs: 0 })
    const ticks = () => t.host.getSandbox(sandbox.sandboxId)?.cpuTicks ?? 0
    const first = ticks()
    await waitUntil(() => ticks() > first + 5, 15_000)
    await sandbox.pause()
    const frozenAt = ticks()
    await new Promise((resolve) => setTimeout(resolve, 700))
    expect(ticks()).toBe(frozenAt)
    await Sandbox.connect(sandbox.sandboxId, t.opts)
    await waitUntil(() => ticks() > frozenAt + 5, 15_000)
  })

  it('isolation: no host /work, /root or host /tmp (/root is the sandbox’s own), and no network without allowInternetAccess', async () => {
    if (t.host.isolation !== 'bubblewrap')
      throw new Error('these tests need bubblewrap (apt-get install bubblewrap)')
    const sandbox = await create()
    const probe = await sandbox.commands.run(
      'ls /work 2>&1; ls /root 2>&1; ls -A /tmp; echo home=$HOME; touch /usr/x 2>&1 || echo ro',
    )
    expect(probe.stdout).toMatch(/ls: cannot access '\/work'/)
    // /root is root's home on the sandbox's own disk: closed to `user`, empty for root, never the host's.
    expect(probe.stdout).toMatch(/ls: cannot open directory '\/root': Permission denied/)
    expect((await sandbox.commands.run('ls -A /root', { user: 'root' })).stdout).toBe('')
    expect(probe.stdout).toContain('home=/home/user')
    expect(probe.stdout).toContain('ro')
    expect(probe.stdout).not.toContain('sandkeep-local-e2b-')
    const port = new URL(t.host.apiUrl).port
    const connect = await sandbox.commands.run(
      `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 2); print('reached')" 2>&1 || echo refused`,
    )
    expect(connect.stdout).toContain('refused')
    const other = await create()
    await sandbox.commands.run('python3 -m http.server 8090 >/dev/null 2>&1 &', { timeoutMs: 0 })
    const reach = await other.commands.run(
      `sleep 0.5; python3 -c "import socket; socket.create_connection(('127.0.0.1', 8090), 2); print('reached')" 2>&1 || echo refused`,
    )
    expect(reach.stdout).toContain('refused')
  })

  it('path escapes are refused', async () => {
    const sandbox = await create()
    await expect(sandbox.files.read('../../etc/passwd')).rejects.toMatchObject({
      name: 'InvalidArgumentError',
    })
    await expect(sandbox.files.read('/etc/passwd')).rejects.toMatchObject({ name: 'InvalidArgumentError' })
    await expect(sandbox.files.write('/home/user/../../../root/x', 'no')).rejects.toMatchObject({
      name: 'InvalidArgumentError',
    })
    await sandbox.commands.run('ln -s /etc/passwd /home/user/link; ln -s / /home/user/rootlink')
    await expect(sandbox.files.read('/home/user/link')).rejects.toThrow()
    await expect(sandbox.files.write('/home/user/rootlink/etc/evil', 'no')).rejects.toThrow()
    await expect(sandbox.files.list('/')).rejects.toMatchObject({ name: 'InvalidArgumentError' })
    await expect(sandbox.files.rename('/home/user/link', '/etc/x')).rejects.toMatchObject({
      name: 'InvalidArgumentError',
    })
  })

  it("a sandbox's token cannot reach another sandbox, and a wrong API key is refused", async () => {
    const a = await create()
    const b = await create()
    await b.files.write('/home/user/secret.txt', 'b only')
    const tokenOfA = (a as unknown as { envdAccessToken: string }).envdAccessToken
    // The SDK's own client for sandbox B, but holding A's token.
    const SandboxClass = Sandbox as unknown as new (options: Record<string, unknown>) => Sandbox
    const intruder = new SandboxClass({
      ...t.opts,
      sandboxId: b.sandboxId,
      envdAccessToken: tokenOfA,
      envdVersion: '0.6.4',
    })
    await expect(intruder.files.read('/home/user/secret.txt')).rejects.toMatchObject({
      name: 'AuthenticationError',
    })
    await expect(intruder.commands.run('true')).rejects.toMatchObject({ name: 'AuthenticationError' })
    const anonymous = new SandboxClass({ ...t.opts, sandboxId: b.sandboxId, envdVersion: '0.6.4' })
    await expect(anonymous.files.read('/home/user/secret.txt')).rejects.toMatchObject({
      name: 'AuthenticationError',
    })
    expect(await b.files.read('/home/user/secret.txt')).toBe('b only')
    await expect(Sandbox.create({ ...t.opts, apiKey: 'e2b_wrong_key_000' })).rejects.toMatchObject({
      name: 'AuthenticationError',
    })
    await expect(Sandbox.list({ ...t.opts, apiKey: 'e2b_wrong_key_000' }).nextItems()).rejects.toMatchObject({
      name: 'AuthenticationError',
    })
    const raw = await fetch(`${t.host.apiUrl}/v2/sandboxes`, { method: 'POST', body: '{"templateID":' })
    expect(raw.status).toBe(401)
    const bad = await fetch(`${t.host.apiUrl}/v2/sandboxes`, {
      method: 'POST',
      headers: { 'x-api-key': t.host.apiKey },
      body: '{"templateID":',
    })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { message: string }).message).toMatch(/JSON/)
    const unknown = await fetch(`${t.host.apiUrl}/v2/sandboxes`, {
      method: 'POST',
      headers: { 'x-api-key': t.host.apiKey },
      body: JSON.stringify({ templateID: 'no-such-template' }),
    })
    expect(unknown.status).toBe(400)
    const huge = await fetch(`${t.host.apiUrl}/v2/sandboxes`, {
      method: 'POST',
      headers: { 'x-api-key': t.host.apiKey },
      body: JSON.stringify({ templateID: 'base', metadata: { big: 'x'.repeat(2 * 1024 * 1024) } }),
    })
    expect(huge.status).toBe(400)
  })

  it('connect with onResume reboot cold-boots: files kept, processes gone', async () => {
    const sandbox = await create()
    const sleeper = await sandbox.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    await sandbox.files.write('/home/user/f.txt', 'kept')
    await sandbox.pause()
    const resumed = await Sandbox.connect(sandbox.sandboxId, { ...t.opts, onResume: 'reboot' } as never)
    expect(await resumed.files.read('/home/user/f.txt')).toBe('kept')
    expect((await resumed.commands.list()).map((process) => process.pid)).not.toContain(sleeper.pid)
    expect(t.host.getSandbox(sandbox.sandboxId)?.pauses.at(-1)?.coldBoot).toBe(true)
  })
})

describe('host restart on the same stateDir', () => {
  it('finds its sandboxes: paused, files kept, processes gone', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const stateDir = mkdtempSync(join(tmpdir(), 'sandkeep-restart-test-'))
    const apiKey = `e2b_test_${Math.random().toString(36).slice(2)}`
    const first = await startLocalE2B({ stateDir, apiKey, logger: () => {} })
    const opts = { apiKey, apiUrl: first.apiUrl, sandboxUrl: first.sandboxUrl }
    let second: Awaited<ReturnType<typeof startLocalE2B>> | undefined
    try {
      const sandbox = await Sandbox.create(opts)
      await sandbox.files.write('/home/user/persist.txt', 'on disk')
      const sleeper = await sandbox.commands.run('sleep 600', { background: true, timeoutMs: 0 })
      const hostPids = first.getSandbox(sandbox.sandboxId)?.hostPids ?? []
      expect(hostPids.length).toBeGreaterThan(0)
      await first.close()
      const alive = (pid: number) => {
        try {
          process.kill(pid, 0)
          return true
        } catch {
          return false
        }
      }
      await waitUntil(() => hostPids.every((pid) => !alive(pid)), 10_000)
      second = await startLocalE2B({ stateDir, apiKey, logger: () => {} })
      const opts2 = { apiKey, apiUrl: second.apiUrl, sandboxUrl: second.sandboxUrl }
      const info = await Sandbox.getInfo(sandbox.sandboxId, opts2)
      expect(info.state).toBe('paused')
      const back = await Sandbox.connect(sandbox.sandboxId, opts2)
      expect(await back.files.read('/home/user/persist.txt')).toBe('on disk')
      expect((await back.commands.list()).map((process) => process.pid)).not.toContain(sleeper.pid)
      expect((await back.commands.run('echo alive')).stdout).toBe('alive\n')
      await back.kill()
    } finally {
      await first.close()
      await second?.close()
      rmSync(stateDir, { recursive: true, force: true })
    }
  })
})

describe('limits', () => {
  it('refuses to run more than maxSandboxes at once with a 429, and counts only running ones', async () => {
    const t = await startTestHost({ maxSandboxes: 1 })
    try {
      const first = await Sandbox.create(t.opts)
      await expect(Sandbox.create(t.opts)).rejects.toMatchObject({ name: 'RateLimitError' })
      await first.pause()
      const second = await Sandbox.create(t.opts)
      await expect(Sandbox.connect(first.sandboxId, t.opts)).resolves.toBeDefined()
      await second.kill()
      await first.kill()
    } finally {
      await t.host.close()
    }
  })
})

describe('a damaged registry', () => {
  it('is moved aside when unreadable, and malformed records are kept untouched', async () => {
    const { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const stateDir = mkdtempSync(join(tmpdir(), 'sandkeep-registry-test-'))
    const warnings: string[] = []
    try {
      writeFileSync(join(stateDir, 'registry.json'), '{ not json')
      const first = await startLocalE2B({ stateDir, logger: (line) => void warnings.push(line) })
      expect(warnings.join('\n')).toMatch(/unreadable/)
      expect(readdirSync(stateDir).some((name) => name.startsWith('registry.json.unreadable-'))).toBe(true)
      const sandbox = await Sandbox.create({
        apiKey: first.apiKey,
        apiUrl: first.apiUrl,
        sandboxUrl: first.sandboxUrl,
      })
      await first.close()
      const registry = JSON.parse(readFileSync(join(stateDir, 'registry.json'), 'utf8')) as {
        sandboxes: unknown[]
      }
      registry.sandboxes.push({ sandboxId: 'broken', state: 42 })
      writeFileSync(join(stateDir, 'registry.json'), JSON.stringify(registry))
      const second = await startLocalE2B({ stateDir, logger: (line) => void warnings.push(line) })
      try {
        expect(second.getSandbox(sandbox.sandboxId)?.state).toBe('paused')
        expect(second.getSandbox('broken')).toBeUndefined()
        expect(warnings.join('\n')).toMatch(/malformed/)
        const saved = JSON.parse(readFileSync(join(stateDir, 'registry.json'), 'utf8')) as {
          sandboxes: unknown[]
        }
        expect(saved.sandboxes).toContainEqual({ sandboxId: 'broken', state: 42 })
      } finally {
        await second.close()
      }
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  })
})
