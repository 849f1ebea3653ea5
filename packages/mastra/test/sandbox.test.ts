// SandkeepMastraSandbox on a real local-e2b host and Redis: the lifecycle Mastra drives (start, stop,
// destroy through the base class's wrappers), commands, files, background processes, port URLs,
// checkpoints and clones. The cases follow what a Mastra sandbox provider is expected to do (the
// categories of Mastra's own provider test suite), written for sandkeep's semantics.
import { hashConversationId, SANDKEEP_METADATA, SandkeepError } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { SandkeepMastraSandbox } from '../src/index.js'
import { useRig } from './helpers.js'

const rig = useRig('mastra-sandbox')

function newSandbox(options: Partial<ConstructorParameters<typeof SandkeepMastraSandbox>[0]> = {}) {
  return new SandkeepMastraSandbox({
    sessions: rig.sessions,
    threadId: rig.newThread(),
    tenant: rig.tenant,
    ...options,
  })
}

/** The host's sandboxes of one thread (by the session hash sandkeep writes in their metadata). */
function sandboxesOf(threadId: string) {
  const session = hashConversationId(threadId)
  return rig.host.listSandboxes().filter((view) => view.metadata[SANDKEEP_METADATA.session] === session)
}

describe('lifecycle', () => {
  it('start creates, stop pauses, start connects to the same sandbox, destroy ends the session', async () => {
    const sandbox = newSandbox()
    expect(sandbox.status).toBe('pending')
    expect(await sandbox._start()).toEqual({ outcome: 'created' })
    expect(sandbox.status).toBe('running')
    const sandboxId = sandbox.report?.sandboxId
    expect(rig.stateOf(sandboxId)).toBe('running')

    await sandbox._stop()
    expect(sandbox.status).toBe('stopped')
    expect(sandbox.endReport?.action).toBe('paused')
    expect(rig.stateOf(sandboxId)).toBe('paused')

    expect(await sandbox._start()).toEqual({ outcome: 'connected' })
    expect(sandbox.report).toMatchObject({ outcome: 'resumed', sandboxId })
    await sandbox._destroy()
    expect(sandbox.status).toBe('destroyed')
    expect(rig.host.getSandbox(sandboxId!)).toBeUndefined()
    expect(await rig.sessions.getSession(sandbox.threadId, { tenant: rig.tenant })).toBeNull()
  })

  it('a stop never kills: the sandbox stays on the host, paused, with its files', async () => {
    const sandbox = newSandbox()
    await sandbox.writeFiles([{ path: '/home/user/keep.txt', content: 'kept' }])
    await sandbox._stop()
    expect(sandboxesOf(sandbox.threadId).map((view) => view.state)).toEqual(['paused'])
    expect(await sandbox.readFile('/home/user/keep.txt')).toBe('kept')
    await sandbox._stop()
  })

  it('concurrent starts of one sandbox share one start', async () => {
    const sandbox = newSandbox()
    const results = await Promise.all([sandbox._start(), sandbox._start(), sandbox.ensureRunning()])
    expect(results.slice(0, 2)).toEqual([{ outcome: 'created' }, { outcome: 'created' }])
    expect(sandboxesOf(sandbox.threadId)).toHaveLength(1)
    await sandbox._stop()
  })

  it('five processes starting one thread at once make one sandbox', async () => {
    const threadId = rig.newThread()
    const sandboxes = Array.from(
      { length: 5 },
      () => new SandkeepMastraSandbox({ sessions: rig.newManager(), threadId, tenant: rig.tenant }),
    )
    const outcomes = await Promise.all(sandboxes.map((sandbox) => sandbox._start()))
    expect(sandboxesOf(threadId)).toHaveLength(1)
    expect(new Set(sandboxes.map((sandbox) => sandbox.report?.sandboxId)).size).toBe(1)
    expect(outcomes.filter((result) => result?.outcome === 'created').length).toBeGreaterThanOrEqual(1)
    await Promise.all(sandboxes.map((sandbox) => sandbox._stop()))
    expect(sandboxesOf(threadId).map((view) => view.state)).toEqual(['paused'])
  })

  it('getInfo names the thread, the tenant and the sandbox', async () => {
    const sandbox = newSandbox()
    await sandbox._start()
    expect(sandbox.getInfo()).toMatchObject({
      id: `sandkeep:${rig.tenant}:${sandbox.threadId}`,
      provider: 'sandkeep',
      status: 'running',
      metadata: { threadId: sandbox.threadId, tenant: rig.tenant, sandboxId: sandbox.report?.sandboxId },
    })
    await sandbox._stop()
  })
})

describe('a lost sandbox', () => {
  it('one past its retention: the next start is created, with the new-sandbox notice in the first output', async () => {
    const sandbox = newSandbox()
    await sandbox.writeFiles([{ path: '/home/user/gone.txt', content: 'x' }])
    const before = sandbox.report?.sandboxId
    await sandbox._stop()
    await rig.host.faults.expire(before!)
    expect(await sandbox._start()).toEqual({ outcome: 'created' })
    expect(sandbox.report).toMatchObject({ outcome: 'recreated', stateLost: true })
    expect(sandbox.report?.sandboxId).not.toBe(before)
    const first = await sandbox.executeCommand('test -e /home/user/gone.txt && echo there || echo missing')
    expect(first.stdout).toMatch(
      /^Notice: the sandbox was replaced by a fresh one since the previous turn[^\n]*\nmissing\n$/,
    )
    // Once: the next command's output is its own.
    expect((await sandbox.executeCommand('echo again')).stdout).toBe('again\n')
    await sandbox._stop()
  })

  it('one killed during a turn: the call fails, and the next turn recreates it and says so', async () => {
    const sandbox = newSandbox()
    await sandbox._start()
    const killed = sandbox.report?.sandboxId
    await rig.sessions.provider.kill(killed!)
    await expect(sandbox.executeCommand('echo hi')).rejects.toMatchObject({ code: 'SANDBOX_NOT_FOUND' })
    await sandbox._stop()
    expect(await sandbox._start()).toEqual({ outcome: 'created' })
    expect(sandbox.report).toMatchObject({ outcome: 'recreated', stateLost: true })
    expect(sandbox.notice).toMatch(/replaced by a fresh one/)
    await sandbox._stop()
  })
})

describe('commands', () => {
  it('runs a command, starting the sandbox when needed; a non-zero exit is a result', async () => {
    const sandbox = newSandbox()
    const ok = await sandbox.executeCommand('echo hello; echo oops >&2')
    expect(ok).toMatchObject({ success: true, exitCode: 0, stdout: 'hello\n', stderr: 'oops\n' })
    expect(sandbox.status).toBe('running')
    const failed = await sandbox.executeCommand('exit 3')
    expect(failed).toMatchObject({ success: false, exitCode: 3 })
    await sandbox._stop()
  })

  it('quotes args, applies env overlay, per-command env and working directory', async () => {
    const sandbox = newSandbox({ env: { GREETING: 'hi' }, workingDirectory: '/tmp' })
    const quoted = await sandbox.executeCommand('printf', ['%s|', 'a b', "it's"])
    expect(quoted.stdout).toBe("a b|it's|")
    const env = await sandbox.executeCommand('echo "$GREETING $NAME"; pwd', [], { env: { NAME: 'ann' } })
    expect(env.stdout).toBe('hi ann\n/tmp\n')
    sandbox.setEnv((current) => ({ ...current, GREETING: 'hey' }))
    const cwd = await sandbox.executeCommand('echo $GREETING; pwd', [], { cwd: '/home/user' })
    expect(cwd.stdout).toBe('hey\n/home/user\n')
    await sandbox._stop()
  })

  it('streams output to the callbacks', async () => {
    const sandbox = newSandbox()
    const chunks: string[] = []
    await sandbox.executeCommand('echo one; echo two', [], { onStdout: (chunk) => chunks.push(chunk) })
    expect(chunks.join('')).toBe('one\ntwo\n')
    await sandbox._stop()
  })
})

describe('files', () => {
  it('writes files (text, bytes, mode) and reads them back', async () => {
    const sandbox = newSandbox()
    await sandbox.writeFiles([
      { path: '/home/user/app/a.txt', content: 'alpha' },
      { path: '/home/user/app/b.bin', content: Buffer.from([104, 105]) },
      { path: '/home/user/app/run.sh', content: 'echo ran', mode: 0o755 },
    ])
    expect(await sandbox.readFile('/home/user/app/a.txt')).toBe('alpha')
    expect(await sandbox.readFile('/home/user/app/b.bin')).toBe('hi')
    expect(
      (await sandbox.executeCommand('stat -c %a app/run.sh && ./app/run.sh', [], { cwd: '/home/user' }))
        .stdout,
    ).toBe('755\nran\n')
    await expect(sandbox.readFile('/home/user/missing.txt')).rejects.toMatchObject({ code: 'FILE_NOT_FOUND' })
    await sandbox._stop()
  })

  it('refuses a bad mode before writing anything', async () => {
    const sandbox = newSandbox()
    await expect(
      sandbox.writeFiles([
        { path: '/home/user/first.txt', content: 'x' },
        { path: '/home/user/second.txt', content: 'y', mode: 0o4755 },
      ]),
    ).rejects.toThrow()
    expect(sandbox.status).toBe('pending')
  })
})

describe('processes', () => {
  it('spawns, reads output and exit code, lists and kills; a process outlives a stop', async () => {
    const sandbox = newSandbox()
    const done = await sandbox.processes.spawn('echo out; echo err >&2; exit 4')
    const result = await done.wait()
    expect(result).toMatchObject({ exitCode: 4, success: false, stdout: 'out\n', stderr: 'err\n' })

    const server = await sandbox.processes.spawn('sleep 600')
    await sandbox._stop()
    // Another server process's object for the thread sees it running too.
    const other = new SandkeepMastraSandbox({
      sessions: rig.newManager(),
      threadId: sandbox.threadId,
      tenant: rig.tenant,
    })
    const seen = (await other.processes.list()).find((info) => info.pid === server.pid)
    expect(seen?.running).toBe(true)
    expect(seen?.command).toContain('sleep 600')
    await other._stop()
    await sandbox._start()
    const listed = await sandbox.processes.list()
    expect(listed.find((info) => info.pid === server.pid)).toMatchObject({
      running: true,
      command: 'sleep 600',
    })
    expect(await (await sandbox.processes.get(server.pid))?.kill()).toBe(true)
    expect((await sandbox.processes.list()).find((info) => info.pid === server.pid)?.running).toBe(false)
    await sandbox._stop()
  })
})

describe('networking', () => {
  it('gives a port URL of the running sandbox, null when it is stopped', async () => {
    const sandbox = newSandbox()
    expect(await sandbox.networking.getPortUrl(8000)).toBeNull()
    await sandbox._start()
    const url = await sandbox.networking.getPortUrl(8000)
    expect(url).toContain(sandbox.report?.sandboxId)
    expect(url).toMatch(/^https?:\/\/8000-/)
    await expect(sandbox.networking.getPortUrl(70_000)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await sandbox._stop()
    expect(await sandbox.networking.getPortUrl(8000)).toBeNull()
  })
})

describe('checkpoints and clones', () => {
  it('snapshot takes a checkpoint; restore goes back to it on the next start', async () => {
    const sandbox = newSandbox()
    await sandbox.writeFiles([{ path: '/home/user/v.txt', content: 'one' }])
    const checkpoint = await sandbox.checkpoint()
    expect(checkpoint?.id).toEqual(expect.any(String))
    await sandbox.writeFiles([{ path: '/home/user/v.txt', content: 'two' }])
    await sandbox._stop()
    expect((await sandbox.listCheckpoints()).checkpoints.map((entry) => entry.id)).toContain(checkpoint?.id)

    await sandbox.restore(checkpoint!.id)
    expect(await sandbox._start()).toEqual({ outcome: 'created' })
    expect(sandbox.report?.outcome).toBe('rewound')
    expect(await sandbox.readFile('/home/user/v.txt')).toBe('one')
    await sandbox._stop()
  })

  it('clone makes no call until its start, then forks; each goes on with its own state', async () => {
    const source = newSandbox()
    await source.writeFiles([{ path: '/home/user/s.txt', content: 'base' }])
    await source._stop()
    const cloneId = rig.newThread()
    const clone = source.clone({ id: cloneId })
    expect(clone.threadId).toBe(cloneId)
    expect(await rig.sessions.getSession(cloneId, { tenant: rig.tenant })).toBeNull()

    expect(await clone._start()).toEqual({ outcome: 'created' })
    expect(clone.report?.outcome).toBe('forked')
    expect(await clone.readFile('/home/user/s.txt')).toBe('base')
    await clone.writeFiles([{ path: '/home/user/s.txt', content: 'clone' }])
    await clone._stop()
    expect(await source.readFile('/home/user/s.txt')).toBe('base')
    expect(source.report?.sandboxId).not.toBe(clone.report?.sandboxId)
    await source._stop()
  })

  it('clone refuses a sandbox id: a thread owns its sandbox', () => {
    const source = newSandbox()
    const attempt = () => source.clone({ sandboxId: 'abc' })
    expect(attempt).toThrow(SandkeepError)
    expect(attempt).toThrow(/sandboxId/)
  })
})
