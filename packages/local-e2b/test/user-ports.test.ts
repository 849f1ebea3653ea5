// A server the sandbox's own code runs, reached as E2B users reach it: `sandbox.getHost(port)` names
// `<port>-<sandboxId>.<domain>` on this host, and the SDK's routing headers work too. HTTP and WebSocket
// both ways, E2B's answers for a missing sandbox, a closed port, a paused sandbox and private ingress, the
// auto-resume a request causes, and the relay that reaches the sandbox's loopback from outside its pid
// namespace and its freezer.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost, waitUntil } from './helpers.js'
import {
  ECHO_SERVER,
  expectOnlyOwnListeners,
  fetchVia,
  openWebSocket,
  startServer,
  WEBSOCKET_SERVER,
} from './ports.js'

const browser =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36'

/** Host pids of the port relays this process started, with the network namespace each is in. */
function relays(): Array<{ pid: number; netns: string }> {
  const found: Array<{ pid: number; netns: string }> = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      if (!command.includes('sandkeep-relay')) continue
      found.push({ pid: Number(entry), netns: readlinkSync(`/proc/${entry}/ns/net`) })
    } catch {}
  }
  return found
}

describe('user ports', () => {
  const t = useTestHost()

  it('getHost(port) names this host, and HTTP reaches the server by that name and by the SDK headers', async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      await startServer(sandbox, ECHO_SERVER, 8000)
      const host = sandbox.getHost(8000)
      expect(host).toBe(`8000-${sandbox.sandboxId}.${t.host.domain}`)
      expect(t.host.domain).toBe(`localhost:${t.host.port}`)
      const byName = await fetchVia(`http://${host}/some/path?q=1`, { headers: { 'x-custom': 'kept' } })
      expect(byName.status).toBe(200)
      expect(byName.headers['x-from-sandbox']).toBe('yes')
      const seen = JSON.parse(byName.body) as { path: string; headers: Record<string, string> }
      expect(seen.path).toBe('/some/path?q=1')
      // The client's Host goes through, as on E2B.
      expect(seen.headers.host).toBe(host)
      expect(seen.headers['x-custom']).toBe('kept')
      const posted = await fetchVia(`http://${host}/upload`, { method: 'POST', body: 'x'.repeat(200_000) })
      expect(posted.status).toBe(201)
      expect(posted.body).toHaveLength(200_000)
      const byHeaders = await fetchVia(`${t.host.sandboxUrl}/via-headers`, {
        headers: { 'E2b-Sandbox-Id': sandbox.sandboxId, 'E2b-Sandbox-Port': '8000' },
      })
      expect(byHeaders.status).toBe(200)
      expect((JSON.parse(byHeaders.body) as { path: string }).path).toBe('/via-headers')
    } finally {
      await sandbox.kill()
    }
  }, 60_000)

  it('relays a WebSocket both ways, and a pause cuts it as a paused VM would', async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      await startServer(sandbox, WEBSOCKET_SERVER, 8765)
      const socket = await openWebSocket(`http://${sandbox.getHost(8765)}/ws`)
      expect(await socket.next()).toBe('hello from the sandbox')
      socket.send('ping')
      expect(await socket.next()).toBe('echo: ping')
      socket.send('x'.repeat(100))
      expect(await socket.next()).toBe(`echo: ${'x'.repeat(100)}`)
      await sandbox.pause()
      await socket.closed
    } finally {
      await Sandbox.kill(sandbox.sandboxId, t.opts)
    }
  }, 60_000)

  it("answers E2B's 502s: port not open, sandbox not found (killed, unknown, paused without auto-resume)", async () => {
    const sandbox = await Sandbox.create(t.opts)
    const closed = await fetchVia(`http://${sandbox.getHost(3000)}/`)
    expect(closed.status).toBe(502)
    expect(JSON.parse(closed.body)).toEqual({
      sandboxId: sandbox.sandboxId,
      message: 'The sandbox is running but port is not open',
      port: 3000,
      code: 502,
    })
    const page = await fetchVia(`http://${sandbox.getHost(3000)}/`, { headers: { 'user-agent': browser } })
    expect(page.status).toBe(502)
    expect(page.headers['content-type']).toMatch(/^text\/html/)
    expect(page.body).toContain('<title>Closed Port Error</title>')
    await sandbox.pause()
    const paused = await fetchVia(`http://${sandbox.getHost(3000)}/`)
    expect(paused.status).toBe(502)
    expect(JSON.parse(paused.body)).toEqual({
      sandboxId: sandbox.sandboxId,
      message: 'The sandbox was not found',
      code: 502,
    })
    expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('paused')
    await Sandbox.kill(sandbox.sandboxId, t.opts)
    const killed = await fetchVia(`http://${sandbox.getHost(3000)}/`)
    expect(killed.status).toBe(502)
    expect(JSON.parse(killed.body)).toMatchObject({ message: 'The sandbox was not found', code: 502 })
    const unknown = await fetchVia(`http://8000-inothere000000000000.${t.host.domain}/`)
    expect(JSON.parse(unknown.body)).toEqual({
      sandboxId: 'inothere000000000000',
      message: 'The sandbox was not found',
      code: 502,
    })
    expect((await fetchVia(`http://99999-${sandbox.sandboxId}.${t.host.domain}/`)).status).toBe(400)
  }, 60_000)

  it('a request to a paused auto-resume sandbox resumes it, and its server answers with its memory kept', async () => {
    const sandbox = await Sandbox.create({ ...t.opts, lifecycle: { onTimeout: 'pause', autoResume: true } })
    try {
      await startServer(sandbox, ECHO_SERVER, 8000)
      await sandbox.pause()
      expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('paused')
      const answer = await fetchVia(`http://${sandbox.getHost(8000)}/after-pause`)
      expect(answer.status).toBe(200)
      expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('running')
      const resumes = t.host.events.list({ type: 'sandbox-resume', sandboxId: sandbox.sandboxId })
      expect(resumes.map((event) => event.detail.reason)).toEqual(['auto-resume'])
      expect(resumes[0]?.detail.coldBoot).toBe(false)
    } finally {
      await sandbox.kill()
    }
  }, 60_000)

  it('network.allowPublicTraffic false: the traffic token is required (403 without or wrong), also to wake it', async () => {
    const sandbox = await Sandbox.create({
      ...t.opts,
      network: { allowPublicTraffic: false },
      lifecycle: { onTimeout: 'pause', autoResume: true },
    })
    try {
      await startServer(sandbox, ECHO_SERVER, 8000)
      const url = `http://${sandbox.getHost(8000)}/`
      const token = sandbox.trafficAccessToken as string
      expect(token).toBeTruthy()
      const missing = await fetchVia(url)
      expect(missing.status).toBe(403)
      expect(JSON.parse(missing.body)).toEqual({
        sandboxId: sandbox.sandboxId,
        message:
          "Sandbox is secured with traffic access token. Token header 'e2b-traffic-access-token' is missing",
        code: 403,
      })
      const wrong = await fetchVia(url, { headers: { 'e2b-traffic-access-token': 'nope' } })
      expect(wrong.status).toBe(403)
      expect(JSON.parse(wrong.body).message).toContain('is invalid')
      expect((await fetchVia(url, { headers: { 'e2b-traffic-access-token': token } })).status).toBe(200)
      await sandbox.pause()
      const denied = await fetchVia(url)
      expect(denied.status).toBe(403)
      expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('paused')
      expect((await fetchVia(url, { headers: { 'e2b-traffic-access-token': token } })).status).toBe(200)
      expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('running')
    } finally {
      await sandbox.kill()
    }
  }, 60_000)

  it('a public sandbox answers without any token, and maskRequestHost rewrites the Host the server sees', async () => {
    const sandbox = await Sandbox.create({
      ...t.opts,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: E2B's placeholder is this literal text
      network: { allowPublicTraffic: true, maskRequestHost: 'app-${PORT}.internal' },
    })
    try {
      await startServer(sandbox, ECHO_SERVER, 8000)
      const answer = await fetchVia(`http://${sandbox.getHost(8000)}/`)
      expect(answer.status).toBe(200)
      const seen = JSON.parse(answer.body) as { headers: Record<string, string> }
      expect(seen.headers.host).toBe('app-8000.internal')
      expect(seen.headers['x-forwarded-host']).toBe(sandbox.getHost(8000))
    } finally {
      await sandbox.kill()
    }
  }, 60_000)

  it('the relay is outside the sandbox: not in its pid namespace or cgroup, not frozen by a pause, unprivileged', async () => {
    const sandbox = await Sandbox.create({ ...t.opts, lifecycle: { onTimeout: 'pause', autoResume: true } })
    let pid = 0
    try {
      await startServer(sandbox, ECHO_SERVER, 8000)
      expect((await fetchVia(`http://${sandbox.getHost(8000)}/`)).status).toBe(200)
      const view = t.host.getSandbox(sandbox.sandboxId)
      const sandboxNet = readlinkSync(`/proc/${view?.hostPids.at(-1)}/ns/net`)
      const relay = relays().find((candidate) => candidate.netns === sandboxNet)
      expect(relay).toBeDefined()
      pid = relay?.pid as number
      expect(readlinkSync(`/proc/${pid}/ns/pid`)).toBe(readlinkSync('/proc/self/ns/pid'))
      expect(readlinkSync(`/proc/${pid}/ns/mnt`)).toBe(readlinkSync('/proc/self/ns/mnt'))
      expect(view?.hostPids).not.toContain(pid)
      expect(readFileSync(`/proc/${pid}/cgroup`, 'utf8')).not.toContain(sandbox.sandboxId)
      expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/^Uid:\s+65534\s/m)
      expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/^CapEff:\s+0+$/m)
      const inside = await sandbox.commands.run('cat /proc/[0-9]*/cmdline | tr "\\0" " "')
      expect(inside.stdout).toContain('python3')
      expect(inside.stdout).not.toContain('sandkeep-relay')
      await sandbox.pause()
      expect(t.host.getSandbox(sandbox.sandboxId)?.frozen).toBe(true)
      expect(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0]).toBe('S')
      expect((await fetchVia(`http://${sandbox.getHost(8000)}/`)).status).toBe(200)
    } finally {
      await sandbox.kill()
    }
    // It ends with the sandbox's namespace.
    await waitUntil(() => !relays().some((relay) => relay.pid === pid))
  }, 60_000)

  it('a sandbox on the host network reaches only its own listeners, never another program on the host loopback', async () => {
    const sandbox = await Sandbox.create({ ...t.opts, allowInternetAccess: true })
    try {
      await expectOnlyOwnListeners(sandbox, t.host.port)
    } finally {
      await sandbox.kill()
    }
  }, 60_000)
})
