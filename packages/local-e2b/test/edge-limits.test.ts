// The port edge under a flood: WebSocket upgrades that the client closes (half-close or reset, before or
// after the server's answer) leave no socket behind, and connections are bounded per sandbox and per host
// with a clear refusal. Loopback only, bounded in count; every wait is for a condition, never for time.
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { afterAll, describe, expect, it } from 'vitest'
import { startHostProcess, useTestHost, waitUntil, within } from './helpers.js'
import { fetchVia, startServer } from './ports.js'

/**
 * A WebSocket server that answers the handshake, greets, and then holds the connection without ever reading
 * it again: it never notices that a client went away (what a busy or careless server does).
 */
const HOLDING_SERVER = `
import socket, sys, threading, time
held = []
def serve(conn):
    f = conn.makefile('rb')
    while f.readline().strip():
        pass
    conn.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n\\x81\\x02hi')
    held.append(conn)
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(('127.0.0.1', int(sys.argv[1])))
server.listen(512)
while True:
    client, _ = server.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
`

/** Open file descriptors of this process (the host runs in it). */
const openFds = () => readdirSync('/proc/self/fd').length

/**
 * Sends a WebSocket upgrade for `port` of the sandbox straight on a socket to the host, waits for the first
 * bytes of the answer (or for `waitFor: 'nothing'`), then closes as told; resolves with the status seen.
 */
/** An upgrade held open: resolves once the answer's first bytes came, with its status and the socket. */
function holdUpgrade(
  hostPort: number,
  sandboxId: string,
  port: number,
): Promise<{ status: number; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: '127.0.0.1', port: hostPort })
    socket.on('error', reject)
    socket.on('connect', () =>
      socket.write(
        `GET /ws HTTP/1.1\r\nHost: ${port}-${sandboxId}.localhost:${hostPort}\r\nConnection: Upgrade\r\n` +
          'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      ),
    )
    socket.once('data', (chunk) =>
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'))?.[1] ?? 0), socket }),
    )
  })
}

function upgradeAndClose(
  hostPort: number,
  sandboxId: string,
  port: number,
  how: 'end' | 'destroy',
  waitFor: 'answer' | 'nothing' = 'answer',
): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: '127.0.0.1', port: hostPort })
    let seen = ''
    const close = () => (how === 'end' ? socket.end() : socket.destroy())
    socket.on('error', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(seen)?.[1] ?? 0)))
    socket.on('connect', () => {
      socket.write(
        `GET /ws HTTP/1.1\r\nHost: ${port}-${sandboxId}.localhost:${hostPort}\r\nConnection: Upgrade\r\n` +
          'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      )
      if (waitFor === 'nothing') {
        close()
        resolve(0)
      }
    })
    socket.on('data', (chunk) => {
      const first = seen.length === 0
      seen += chunk.toString('latin1')
      if (first && waitFor === 'answer') {
        close()
        resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(seen)?.[1] ?? 0))
      }
    })
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(seen)?.[1] ?? 0)))
    setTimeout(() => reject(new Error('no answer to the upgrade')), 30_000).unref()
  })
}

/** Runs `count` tasks, `width` at a time. */
async function inBatches(count: number, width: number, task: (index: number) => Promise<unknown>) {
  for (let start = 0; start < count; start += width) {
    await Promise.all(
      Array.from({ length: Math.min(width, count - start) }, (_, offset) => task(start + offset)),
    )
  }
}

describe('the port edge under a flood', () => {
  const t = useTestHost({})

  it('300 upgrades closed by the client leave no socket open: the fd count returns to its baseline', async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      await startServer(sandbox, HOLDING_SERVER, 8765)
      // One round first, so that the relay and its socket directory exist before the baseline.
      expect(await upgradeAndClose(t.host.port, sandbox.sandboxId, 8765, 'end')).toBe(101)
      await waitUntil(() => t.host.openConnections().total === 0, 30_000)
      const baseline = openFds()
      const statuses: number[] = []
      await inBatches(300, 20, async (index) => {
        const how = index % 2 === 0 ? 'end' : 'destroy'
        statuses.push(
          await upgradeAndClose(
            t.host.port,
            sandbox.sandboxId,
            8765,
            how,
            index % 10 === 9 ? 'nothing' : 'answer',
          ),
        )
      })
      expect(statuses.filter((status) => status === 101).length).toBeGreaterThan(200)
      await waitUntil(() => t.host.openConnections().total === 0 && openFds() <= baseline + 2, 60_000)
      // And the sandbox still serves.
      expect(await upgradeAndClose(t.host.port, sandbox.sandboxId, 8765, 'end')).toBe(101)
    } finally {
      await sandbox.kill()
    }
  }, 180_000)
})

describe('connection bounds of the port edge', () => {
  const t = useTestHost({ maxConnectionsPerSandbox: 4, maxConnections: 6 })

  it('past maxConnectionsPerSandbox a sandbox answers 429, past maxConnections the host answers 503; both with Retry-After', async () => {
    const first = await Sandbox.create(t.opts)
    const second = await Sandbox.create(t.opts)
    const held: Socket[] = []
    try {
      await startServer(first, HOLDING_SERVER, 8765)
      await startServer(second, HOLDING_SERVER, 8765)
      for (let index = 0; index < 4; index++) {
        const open = await holdUpgrade(t.host.port, first.sandboxId, 8765)
        held.push(open.socket)
        expect(open.status).toBe(101)
      }
      const refused = await holdUpgrade(t.host.port, first.sandboxId, 8765)
      held.push(refused.socket)
      expect(refused.status).toBe(429)
      const http = await fetchVia(`http://${first.getHost(8765)}/`)
      expect(http.status).toBe(429)
      expect(http.headers['retry-after']).toBe('1')
      expect(JSON.parse(http.body)).toMatchObject({ code: 429, sandboxId: first.sandboxId })
      expect(JSON.parse(http.body).message).toContain('maxConnectionsPerSandbox')
      for (let index = 0; index < 2; index++) {
        const open = await holdUpgrade(t.host.port, second.sandboxId, 8765)
        held.push(open.socket)
        expect(open.status).toBe(101)
      }
      const busy = await fetchVia(`http://${second.getHost(8765)}/`)
      expect(busy.status).toBe(503)
      expect(busy.headers['retry-after']).toBe('1')
      expect(JSON.parse(busy.body).message).toContain('maxConnections')
      expect(t.host.openConnections()).toEqual({
        total: 6,
        bySandbox: { [first.sandboxId]: 4, [second.sandboxId]: 2 },
      })
      expect(t.host.events.list({ type: 'edge-refuse' }).map((event) => event.detail.status)).toEqual([
        429, 429, 503,
      ])
      // The API and envd are not the edge's: they still answer.
      expect((await first.commands.run('echo still')).stdout).toBe('still\n')
      for (const socket of held) socket.destroy()
      await waitUntil(() => t.host.openConnections().total === 0, 30_000)
      expect((await holdUpgrade(t.host.port, first.sandboxId, 8765)).status).toBe(101)
    } finally {
      for (const socket of held) socket.destroy()
      await first.kill()
      await second.kill()
    }
  }, 120_000)
})

describe('a host out of file descriptors', () => {
  const dirs: string[] = []
  afterAll(async () => {
    for (const dir of dirs) {
      for (const path of mountsUnder(dir)) spawnSync('umount', ['-l', path])
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('answers a create 503 "out of file descriptors" (never a TypeError), and a SIGTERM still cleans up', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'sk-edge-fds-'))
    dirs.push(stateDir)
    // 100 descriptors: a few sandboxes fit, then the namespace's pipes no longer do.
    const host = await startHostProcess(stateDir, { spawnAs: ['prlimit', '--nofile=100:100', '--'] })
    try {
      const opts = { ...host.opts, allowInternetAccess: false }
      let failure: (Error & { statusCode?: number }) | undefined
      for (let attempt = 0; attempt < 40 && !failure; attempt++) {
        failure = await Sandbox.create(opts).then(
          () => undefined,
          (error: Error & { statusCode?: number }) => error,
        )
      }
      expect(failure?.message).toMatch(/out of file descriptors \(EMFILE\)/)
      expect(failure?.message).not.toMatch(/Cannot read properties/)
      // A process out of descriptors is still alive and answers.
      expect(host.child.exitCode).toBeNull()
      host.child.kill('SIGTERM')
      expect(await within(60_000, 'the host stopping', host.exited)).toBe(0)
      expect(mountsUnder(stateDir)).toEqual([])
      const registry = JSON.parse(readFileSync(join(stateDir, 'registry.json'), 'utf8')) as {
        sandboxes: Array<{ state: string }>
      }
      expect(registry.sandboxes.length).toBeGreaterThan(0)
      expect(registry.sandboxes.every((record) => record.state === 'paused')).toBe(true)
    } finally {
      host.child.kill('SIGKILL')
      await host.exited
    }
  }, 180_000)
})

function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((path) => path.startsWith(`${dir}/`))
}
