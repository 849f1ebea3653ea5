// What a sandbox created with allowInternetAccess: true reaches. This machine has no internet, so a network
// namespace made here stands in for it on a public-looking address (TEST-NET-3), reached through the host;
// the same namespace also listens on a private address. Everything stays on this machine.
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { Sandbox } from 'e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestHost, stopTestHost, useTestHost } from './helpers.js'

const tag = randomBytes(2).toString('hex')
const namespace = `sk-inet-${tag}`
const hostEnd = `skt${tag}`
const subnet = Number.parseInt(tag, 16) % 250
/** The stand-in internet's address, routed to the namespace by a host route of this test. */
const PUBLIC = `203.0.113.${1 + (subnet % 200)}`
/** The namespace's end of the link: a private address. */
const PRIVATE = `10.213.${subnet}.2`
const PORT = 8080

function sh(command: string): void {
  execFileSync('/bin/sh', ['-c', command], { stdio: 'pipe', timeout: 10_000 })
}

/** Python inside a sandbox: tries each host:port (2 s each, in parallel) and prints `target ok|error`. */
const PROBE = `
import socket, sys, threading
results = {}
def probe(target):
    host, port = target.rsplit(':', 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
        results[target] = 'ok'
    except OSError as error:
        results[target] = type(error).__name__
threads = [threading.Thread(target=probe, args=(target,)) for target in sys.argv[1:]]
for thread in threads: thread.start()
for thread in threads: thread.join()
for target in sys.argv[1:]: print(target, results[target])
`

async function probe(sandbox: Sandbox, targets: string[]): Promise<Record<string, string>> {
  await sandbox.files.write('/tmp/probe.py', PROBE)
  const result = await sandbox.commands.run(`python3 /tmp/probe.py ${targets.join(' ')}`, {
    timeoutMs: 20_000,
  })
  return Object.fromEntries(
    result.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' ')),
  )
}

let hostListener: Server
let listener: { kill: () => void } | undefined
/** A listener of the host on every address (its LAN address included). */
let hostPort = 0

beforeAll(async () => {
  sh(`ip netns add ${namespace}`)
  sh(`ip link add ${hostEnd} type veth peer name eth0 netns ${namespace}`)
  sh(`ip addr add 10.213.${subnet}.1/30 dev ${hostEnd} && ip link set ${hostEnd} up`)
  sh(
    `ip netns exec ${namespace} sh -c 'ip link set lo up && ip link set eth0 up && ip addr add ${PRIVATE}/30 dev eth0 && ip addr add ${PUBLIC}/32 dev eth0 && ip route add default via 10.213.${subnet}.1'`,
  )
  sh(`ip route add ${PUBLIC}/32 via ${PRIVATE}`)
  const child = (await import('node:child_process')).spawn(
    'ip',
    ['netns', 'exec', namespace, 'python3', '-m', 'http.server', '--bind', '0.0.0.0', String(PORT)],
    { stdio: 'ignore' },
  )
  listener = { kill: () => child.kill('SIGKILL') }
  hostListener = createServer((socket) => socket.end('host\n'))
  await new Promise<void>((resolve) => hostListener.listen(0, '0.0.0.0', resolve))
  hostPort = (hostListener.address() as { port: number }).port
  // The stand-in internet answers the host itself.
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      sh(`python3 -c "import socket; socket.create_connection(('${PUBLIC}', ${PORT}), timeout=1).close()"`)
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  throw new Error('the stand-in internet did not come up')
})

afterAll(() => {
  listener?.kill()
  hostListener?.close()
  try {
    sh(`ip route del ${PUBLIC}/32`)
  } catch {}
  try {
    sh(`ip netns del ${namespace}`)
  } catch {}
})

/** The host's own addresses besides loopback (its LAN address, the sandboxes' link ends excluded). */
function hostAddresses(): string[] {
  return Object.entries(networkInterfaces())
    .filter(([name]) => !name.startsWith('skv') && name !== hostEnd)
    .flatMap(([, addresses]) => addresses ?? [])
    .filter((address) => address.family === 'IPv4' && !address.internal)
    .map((address) => address.address)
}

describe('allowInternetAccess: true', () => {
  const t = useTestHost()

  it("reaches the internet, never the host's services, its networks, private ranges or other sandboxes", async () => {
    const open = await Sandbox.create({ ...t.opts, allowInternetAccess: true })
    const other = await Sandbox.create({ ...t.opts, allowInternetAccess: true })
    await other.commands.run(`python3 -m http.server ${PORT} --bind 0.0.0.0`, {
      background: true,
      timeoutMs: 0,
    })
    const otherAddress = (await other.commands.run("ip -4 -o addr show eth0 | awk '{print $4}'")).stdout
    const gateway = (await open.commands.run("ip route | awk '/default/ {print $3}'")).stdout.trim()
    const lan = hostAddresses().map((address) => `${address}:${hostPort}`)
    expect(lan.length).toBeGreaterThan(0)
    const targets = [
      `${PUBLIC}:${PORT}`,
      `${PRIVATE}:${PORT}`,
      '127.0.0.1:6379',
      `${gateway}:${hostPort}`,
      `${otherAddress.trim().split('/')[0]}:${PORT}`,
      ...lan,
    ]
    const reached = await probe(open, targets)
    expect(reached[`${PUBLIC}:${PORT}`]).toBe('ok')
    for (const target of targets.slice(1)) expect(reached[target], target).not.toBe('ok')
    // The host's own listener is there: the host reaches it on those addresses.
    for (const target of lan) {
      const [address, port] = target.split(':')
      sh(`python3 -c "import socket; socket.create_connection(('${address}', ${port}), timeout=2).close()"`)
    }
    // Without internet access: nothing at all.
    const closed = await Sandbox.create(t.opts)
    expect((await probe(closed, [`${PUBLIC}:${PORT}`]))[`${PUBLIC}:${PORT}`]).not.toBe('ok')
    for (const sandbox of [open, other, closed]) await sandbox.kill()
  }, 60_000)

  it('is refused with a clear error where the machine cannot filter it', async () => {
    process.env.SANDKEEP_LOCAL_E2B_NO_NFT = '1'
    const unfiltered = await startTestHost().finally(() => {
      delete process.env.SANDKEEP_LOCAL_E2B_NO_NFT
    })
    try {
      await expect(Sandbox.create({ ...unfiltered.opts, allowInternetAccess: true })).rejects.toThrow(
        /cannot keep a sandbox with internet access off its own network/,
      )
      const offline = await Sandbox.create({ ...unfiltered.opts, allowInternetAccess: false })
      expect((await offline.commands.run('echo ok')).stdout).toBe('ok\n')
      await offline.kill()
    } finally {
      await stopTestHost(unfiltered)
    }
  })
})
