// The relay programs themselves (the compiled one and the Python fallback for machines without a C
// compiler), driven by their protocol against a real sandbox namespace: `<port>\n`, one status byte, then
// the bytes of the connection; and their end when the sandbox's namespace ends.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { afterAll, describe, expect, it } from 'vitest'
import { relayCommand } from '../src/runtime/relay-program.js'
import { useTestHost, waitUntil } from './helpers.js'
import { ECHO_SERVER, startServer } from './ports.js'

const dir = mkdtempSync(join(tmpdir(), 'sk-relay-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The host pid of the sandbox's pid 1 (its namespaces' anchor). */
function initPidOf(hostPids: number[]): number {
  const init = hostPids.find((pid) => /^NSpid:.*\s1$/m.test(readFileSync(`/proc/${pid}/status`, 'utf8')))
  if (init === undefined) throw new Error('no init among the sandbox processes')
  return init
}

/** Asks the relay for `port` and sends `payload`; resolves with the status byte and what came back. */
function ask(socketPath: string, port: number, payload: string): Promise<{ status: number; reply: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath)
    let received = Buffer.alloc(0)
    socket.on('connect', () => socket.write(`${port}\n${payload}`))
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
    })
    socket.on('error', reject)
    socket.on('close', () => resolve({ status: received[0] ?? -1, reply: received.subarray(1).toString() }))
    socket.setTimeout(10_000, () => socket.destroy(new Error('relay did not answer')))
  })
}

describe.each(['c', 'python'] as const)('the %s relay', (kind) => {
  const t = useTestHost()

  it('connects to the sandbox loopback, says why it could not, and ends with the sandbox', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const initPid = initPidOf(t.host.getSandbox(sandbox.sandboxId)?.hostPids ?? [])
    const socketPath = join(dir, `${kind}.sock`)
    const command = relayCommand(initPid, socketPath, kind)
    expect(command.kind).toBe(kind)
    const relay = spawn(command.file, command.args, { stdio: ['ignore', 'pipe', 'pipe'] })
    const exited = new Promise<void>((resolve) => relay.on('exit', () => resolve()))
    try {
      await new Promise<void>((resolve, reject) => {
        relay.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve())
        relay.on('exit', (code) => reject(new Error(`relay exited with ${code}`)))
      })
      await startServer(sandbox, ECHO_SERVER, 8000)
      const answered = await ask(socketPath, 8000, 'GET /through-relay HTTP/1.0\r\n\r\n')
      expect(answered.status).toBe(0)
      expect(answered.reply).toMatch(/^HTTP\/1\.0 200/)
      expect(answered.reply).toContain('/through-relay')
      // ECONNREFUSED (111): the port is closed inside the sandbox's namespace, whatever listens on the host's.
      expect((await ask(socketPath, t.host.port, '')).status).toBe(111)
    } finally {
      await sandbox.kill()
    }
    await exited
    await waitUntil(() => relay.exitCode !== null || relay.signalCode !== null)
  }, 60_000)
})
