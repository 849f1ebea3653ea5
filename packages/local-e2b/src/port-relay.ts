// Connections from the host to a port on a sandbox's loopback, whichever way the sandbox is networked:
// - its own network namespace (bubblewrap --unshare-net, or any namespace of its own): through the sandbox's
//   relay (runtime/relay-program.ts), started on first use, which alone joins that namespace and connects to
//   127.0.0.1:<port> there;
// - the host's network namespace (isolation 'none', or a sandbox sharing the host's network): the port is on
//   the host's own loopback, where the host's other services listen too. The host then connects only when a
//   process of that sandbox holds the listening socket (found through /proc), so a sandbox's port never
//   reaches Redis, this host's own API or anything else on the machine.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { relayCommand } from './runtime/relay-program.js'
import type { Sandbox } from './sandbox.js'

/** Nothing accepted the connection (refused, unreachable, or no listener of this sandbox). */
export class PortNotOpenError extends Error {
  constructor(
    readonly port: number,
    /** errno name of the failure, e.g. ECONNREFUSED. */
    readonly errno: string,
  ) {
    super(`nothing accepts connections on port ${port} (${errno})`)
  }
}

/** How long a relay may take to say it is ready. */
const RELAY_START_MS = 5_000

/** errno numbers the relay may answer with, by name (Linux). */
const ERRNO_NAMES: Record<number, string> = {
  13: 'EACCES',
  99: 'EADDRNOTAVAIL',
  101: 'ENETUNREACH',
  110: 'ETIMEDOUT',
  111: 'ECONNREFUSED',
  113: 'EHOSTUNREACH',
}

interface RelayProcess {
  initPid: number
  socketPath: string
  child: ChildProcess
  ready: Promise<void>
}

export interface PortRelaysOptions {
  /** Where warnings go. */
  logger: (line: string) => void
  /** Relay implementation to use (the Python one is the fallback without a C compiler). */
  prefer?: 'c' | 'python'
}

/** The host's relays, one per sandbox namespace, and the direct path for sandboxes on the host's network. */
export class PortRelays {
  readonly #options: PortRelaysOptions
  readonly #relays = new Map<string, RelayProcess>()
  #directory: string | undefined
  #sockets = 0
  #closed = false

  constructor(options: PortRelaysOptions) {
    this.#options = options
  }

  /**
   * A socket connected to `port` on the sandbox's loopback. The sandbox must be running (its namespace
   * booted). Throws PortNotOpenError when nothing of the sandbox accepts on that port.
   */
  async connect(sandbox: Sandbox, port: number): Promise<Socket> {
    if (this.#closed) throw new Error('the host is closing')
    const initPid = sandbox.runtime.namespacePid
    if (initPid === undefined || sharesHostNetwork(initPid)) return connectOwned(sandbox, port)
    const relay = await this.#relayFor(sandbox.id, initPid)
    return throughRelay(relay.socketPath, port)
  }

  /** Stops every relay (they also end on their own with their sandbox, or with this process). */
  close(): void {
    this.#closed = true
    for (const relay of this.#relays.values()) relay.child.kill('SIGKILL')
    this.#relays.clear()
    if (this.#directory) rmSync(this.#directory, { recursive: true, force: true })
    this.#directory = undefined
  }

  async #relayFor(sandboxId: string, initPid: number): Promise<RelayProcess> {
    const known = this.#relays.get(sandboxId)
    if (
      known &&
      known.initPid === initPid &&
      known.child.exitCode === null &&
      known.child.signalCode === null
    ) {
      await known.ready
      return known
    }
    // A relay of an earlier namespace of this sandbox ended with it (or is about to).
    known?.child.kill('SIGKILL')
    this.#directory ??= mkdtempSync(join(tmpdir().length < 60 ? tmpdir() : '/tmp', 'sandkeep-relay-'))
    const socketPath = join(this.#directory, `${++this.#sockets}.sock`)
    const command = relayCommand(initPid, socketPath, this.#options.prefer)
    const child = spawn(command.file, command.args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    })
    const relay: RelayProcess = { initPid, socketPath, child, ready: readyOf(child) }
    this.#relays.set(sandboxId, relay)
    child.on('exit', () => {
      if (this.#relays.get(sandboxId) === relay) this.#relays.delete(sandboxId)
      rmSync(socketPath, { force: true })
    })
    try {
      await relay.ready
    } catch (error) {
      child.kill('SIGKILL')
      this.#options.logger(`[sandkeep-local-e2b] port relay of ${sandboxId} did not start: ${String(error)}`)
      throw error
    }
    return relay
  }
}

/** Resolves when the relay printed `ready`; rejects with its complaint when it ends or stalls first. */
function readyOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => reject(new Error('timed out')), RELAY_START_MS)
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (stdout.includes('ready\n')) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 2000) stderr += chunk.toString()
    })
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`exited (${code ?? signal})${stderr ? `: ${stderr.trim()}` : ''}`))
    })
  })
}

/** Asks the relay for `port`: resolves with the connected stream once it answered 0. */
function throughRelay(socketPath: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath)
    const fail = (error: Error) => {
      socket.destroy()
      reject(error)
    }
    socket.once('error', fail)
    socket.once('close', () => fail(new PortNotOpenError(port, 'relay closed')))
    socket.once('connect', () => socket.write(`${port}\n`))
    const onData = (chunk: Buffer) => {
      socket.off('data', onData)
      socket.pause()
      const status = chunk[0] ?? 255
      if (status !== 0) return fail(new PortNotOpenError(port, ERRNO_NAMES[status] ?? `errno ${status}`))
      socket.removeAllListeners('error')
      socket.removeAllListeners('close')
      if (chunk.length > 1) socket.unshift(chunk.subarray(1))
      socket.setNoDelay(true)
      resolve(socket)
    }
    socket.on('data', onData)
  })
}

/** True when the sandbox's processes are in the host's network namespace (its loopback is the host's). */
function sharesHostNetwork(initPid: number): boolean {
  try {
    return readlinkSync(`/proc/${initPid}/ns/net`) === readlinkSync('/proc/self/ns/net')
  } catch {
    return false
  }
}

/** A loopback listener of the host's network namespace: its socket inode and how to reach it. */
interface Listener {
  inode: string
  family: 4 | 6
}

/** Listening sockets on `port` reachable over loopback (bound to the wildcard or loopback address). */
function loopbackListeners(port: number): Listener[] {
  const listeners: Listener[] = []
  const wildcardOrLoopback = new Set([
    '00000000',
    '0100007F',
    '00000000000000000000000000000000',
    '00000000000000000000000001000000',
    '0000000000000000FFFF00000100007F',
  ])
  for (const [file, family] of [
    ['/proc/self/net/tcp', 4],
    ['/proc/self/net/tcp6', 6],
  ] as const) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/)
      const [address, portHex] = (fields[1] ?? '').split(':')
      if (fields[3] !== '0A' || Number.parseInt(portHex ?? '', 16) !== port) continue
      if (!wildcardOrLoopback.has((address ?? '').toUpperCase())) continue
      if (fields[9]) listeners.push({ inode: fields[9], family })
    }
  }
  return listeners
}

/** The listener of `listeners` that one of `pids` holds open, if any. */
function ownedListener(listeners: Listener[], pids: number[]): Listener | undefined {
  const byLink = new Map(listeners.map((listener) => [`socket:[${listener.inode}]`, listener]))
  for (const pid of pids) {
    let fds: string[]
    try {
      fds = readdirSync(`/proc/${pid}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      try {
        const found = byLink.get(readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (found) return found
      } catch {}
    }
  }
  return undefined
}

/**
 * Connects to a port on the host's own loopback, only when a process of the sandbox listens there. (Between
 * the check and the connect the sandbox could close its listener and another program take the port; the
 * window is one system call wide.)
 */
function connectOwned(sandbox: Sandbox, port: number): Promise<Socket> {
  const listener = ownedListener(loopbackListeners(port), sandbox.runtime.hostPids())
  if (!listener) return Promise.reject(new PortNotOpenError(port, 'ECONNREFUSED'))
  return new Promise((resolve, reject) => {
    const socket = connect({ host: listener.family === 4 ? '127.0.0.1' : '::1', port })
    socket.once('connect', () => {
      socket.removeAllListeners('error')
      socket.setNoDelay(true)
      resolve(socket)
    })
    socket.once('error', (error: NodeJS.ErrnoException) => {
      socket.destroy()
      reject(new PortNotOpenError(port, error.code ?? 'ECONNREFUSED'))
    })
  })
}
