// The pause fidelities of the README's platform table, reproduced for real: one scenario per mode (memory in a
// running server, a file, the server process itself), observed through the real SDK after pause + connect.
import { Sandbox } from '@e2b/code-interpreter'
import { describe, expect, it } from 'vitest'
import { PAUSE_MODE_METADATA_KEY, VOLUME_METADATA_KEY } from '../src/index.js'
import { COUNTING_SERVER, type TestHost, useTestHost, waitUntil } from './helpers.js'

const GET = `python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8080', timeout=2).read().decode())"`

async function hit(sandbox: Sandbox): Promise<string | undefined> {
  try {
    return (await sandbox.commands.run(GET)).stdout.trim()
  } catch {
    return undefined
  }
}

/** Sets up the scenario: a counter in a server's memory (hit once), a marker file, a file in the volume. */
async function scenario(t: TestHost, mode: string) {
  const sandbox = await Sandbox.create({
    ...t.opts,
    template: 'code-interpreter-v1',
    metadata: { [PAUSE_MODE_METADATA_KEY]: mode, [VOLUME_METADATA_KEY]: '/home/user/volume' },
  } as never)
  await sandbox.runCode('x = 41 + 1')
  await sandbox.files.write('/home/user/volume/server.py', COUNTING_SERVER)
  await sandbox.files.write('/home/user/marker.txt', 'written before pause')
  const server = await sandbox.commands.run('python3 /home/user/volume/server.py', {
    background: true,
    timeoutMs: 0,
  })
  await waitUntil(async () => (await hit(sandbox)) !== undefined, 15_000)
  expect(await hit(sandbox)).toBe('2')
  expect(await sandbox.pause()).toBe(true)
  const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
  return { sandbox, resumed, serverPid: server.pid }
}

describe('pause fidelities', () => {
  const t = useTestHost()

  it('memory: everything kept (server memory, file, same pid)', async () => {
    const { resumed, serverPid } = await scenario(t, 'memory')
    expect((await resumed.runCode('x')).text).toBe('42')
    expect(await hit(resumed)).toBe('3')
    expect(await resumed.files.read('/home/user/marker.txt')).toBe('written before pause')
    expect((await resumed.commands.list()).map((process) => process.pid)).toEqual([serverPid])
    const view = t.host.getSandbox(resumed.sandboxId)
    expect(view?.pauses.at(-1)).toMatchObject({ mode: 'memory', coldBoot: false })
  })

  it('filesystem: files kept, processes and memory gone (cold boot)', async () => {
    const { resumed } = await scenario(t, 'filesystem')
    expect((await resumed.runCode('x')).error?.name).toBe('NameError')
    expect(await resumed.files.read('/home/user/marker.txt')).toBe('written before pause')
    expect(await resumed.commands.list()).toEqual([])
    expect(await hit(resumed)).toBeUndefined()
    expect(t.host.getSandbox(resumed.sandboxId)?.pauses.at(-1)).toMatchObject({
      mode: 'filesystem',
      coldBoot: true,
    })
  })

  it('processes: the process list is restarted with new pids, memory and local disk lost, volume kept', async () => {
    const { resumed, serverPid } = await scenario(t, 'processes')
    expect((await resumed.runCode('x')).error?.name).toBe('NameError')
    const info = await resumed.getInfo()
    const snapshot = JSON.parse(Buffer.from(info.metadata.snapshot ?? '', 'base64').toString('utf8')) as {
      captured_time: string
      processes: Array<{ config: { cmd: string; args: string[]; cwd: string }; pid: number }>
    }
    expect(Number.isNaN(Date.parse(snapshot.captured_time))).toBe(false)
    expect(snapshot.processes).toHaveLength(1)
    expect(snapshot.processes[0]?.pid).toBe(serverPid)
    expect(snapshot.processes[0]?.config.args.join(' ')).toContain('python3 /home/user/volume/server.py')
    await waitUntil(async () => (await hit(resumed)) !== undefined, 15_000)
    // A fresh process: its counter starts again.
    expect(await hit(resumed)).toBe('2')
    const processes = await resumed.commands.list()
    expect(processes).toHaveLength(1)
    expect(processes[0]?.pid).not.toBe(serverPid)
    expect(await resumed.files.exists('/home/user/marker.txt')).toBe(false)
    expect(await resumed.files.exists('/home/user/volume/server.py')).toBe(true)
    expect(t.host.getSandbox(resumed.sandboxId)?.pauses.at(-1)).toMatchObject({
      mode: 'processes',
      coldBoot: true,
    })
  })
})

describe('retention', () => {
  const t = useTestHost({ retentionMs: 400 })

  it('a sandbox paused longer than retentionMs is gone: connect gets SandboxNotFoundError', async () => {
    const sandbox = await Sandbox.create(t.opts)
    await sandbox.files.write('/home/user/f.txt', 'x')
    const homeDir = t.host.getSandbox(sandbox.sandboxId)?.homeDir ?? ''
    await sandbox.pause()
    await t.host.events.waitFor('sandbox-expire', (event) => event.sandboxId === sandbox.sandboxId, 10_000)
    await expect(Sandbox.connect(sandbox.sandboxId, t.opts)).rejects.toMatchObject({
      name: 'SandboxNotFoundError',
    })
    const { existsSync } = await import('node:fs')
    expect(existsSync(homeDir)).toBe(false)
  })

  it('a sandbox resumed within retentionMs is kept', async () => {
    const sandbox = await Sandbox.create(t.opts)
    await sandbox.pause()
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    await new Promise((resolve) => setTimeout(resolve, 600))
    expect((await resumed.getInfo()).state).toBe('running')
    await resumed.kill()
  })
})
