// The Experimental_SandboxSession contract on a real local-e2b sandbox (through the E2B provider and SDK).
import { randomUUID } from 'node:crypto'
import type { SessionManager } from '@sandkeep/core'
import type { LocalE2BHost } from '@sandkeep/local-e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSandboxSession } from '../src/sandbox-session/index.js'
import { sandboxTools } from '../src/sandbox-tools.js'
import { startLocalSessions, stopLocalSessions } from './helpers.js'

let host: LocalE2BHost
let sessions: SessionManager
const conversationId = `session-${randomUUID()}`

beforeAll(async () => {
  ;({ host, sessions } = await startLocalSessions())
}, 120_000)

afterAll(() => stopLocalSessions({ host, sessions }, [conversationId]), 120_000)

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = ''
  const decoder = new TextDecoder()
  for await (const chunk of stream) text += decoder.decode(chunk, { stream: true })
  return text
}

describe('createSandboxSession on local-e2b', () => {
  it('files: text, bytes, line ranges, null when missing, parents created, stat, list, delete', async () => {
    await using session = createSandboxSession({ sessions, conversationId })
    expect(session.started).toBe(false)
    expect(await session.readTextFile({ path: 'nothing/here.txt' })).toBeNull()
    expect(session.report?.outcome).toBe('created')
    await session.writeTextFile({ path: 'a/b/c.txt', content: 'l1\nl2\nl3\n' })
    expect(await session.readTextFile({ path: '/home/user/a/b/c.txt', startLine: 2, endLine: 9 })).toBe(
      'l2\nl3\n',
    )
    const bytes = new Uint8Array([0, 255, 10, 13])
    await session.writeBinaryFile({ path: 'bin/x.bin', content: bytes })
    expect(await session.readBinaryFile({ path: 'bin/x.bin' })).toEqual(bytes)
    expect(await readAll((await session.readFile({ path: 'a/b/c.txt' }))!)).toBe('l1\nl2\nl3\n')
    expect(await session.stat({ path: 'a/b/c.txt' })).toEqual({ type: 'file', size: 9 })
    expect(await session.stat({ path: 'a' })).toMatchObject({ type: 'directory' })
    expect(await session.stat({ path: 'missing' })).toBeNull()
    expect(await session.listDirectory({ path: 'a' })).toEqual([{ name: 'b', type: 'directory' }])
    expect(await session.listDirectory({ path: 'missing' })).toBeNull()
    await expect(session.deleteFile({ path: 'a' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await session.deleteFile({ path: 'a/b/c.txt' })).toBe(true)
    expect(await session.deleteFile({ path: 'a/b/c.txt' })).toBe(false)
    const end = await session.end()
    expect(end?.action).toBe('paused')
    expect(host.getSandbox(session.report!.sandboxId)?.state).toBe('paused')
  }, 120_000)

  it('processes: run with cwd and env, spawn streams and can be killed, aborts are honoured', async () => {
    await using session = createSandboxSession({ sessions, conversationId })
    await session.writeTextFile({ path: 'work/in.txt', content: 'x' })
    expect(
      await session.run({ command: 'pwd; ls; echo $FOO', workingDirectory: 'work', env: { FOO: 'bar' } }),
    ).toEqual({
      exitCode: 0,
      stdout: '/home/user/work\nin.txt\nbar\n',
      stderr: '',
    })
    expect(await session.run({ command: 'echo no >&2; exit 4' })).toMatchObject({
      exitCode: 4,
      stderr: 'no\n',
    })

    const child = await session.spawn({
      command: 'for i in 1 2 3; do echo line $i; sleep 0.1; done; echo done >&2',
    })
    const [out, err, exit] = await Promise.all([readAll(child.stdout), readAll(child.stderr), child.wait()])
    expect(out).toBe('line 1\nline 2\nline 3\n')
    expect(err).toBe('done\n')
    expect(exit).toEqual({ exitCode: 0 })

    const sleeper = await session.spawn({ command: 'echo up; sleep 60' })
    const reader = sleeper.stdout.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('up\n')
    await sleeper.kill()
    expect(await sleeper.wait()).toEqual({ exitCode: -1 })

    const controller = new AbortController()
    const running = session.run({ command: 'sleep 60', abortSignal: controller.signal })
    setTimeout(() => controller.abort(new Error('enough')), 300)
    await expect(running).rejects.toBeDefined()
    expect(await session.run({ command: "pgrep -xf 'sleep 60' || echo none" })).toMatchObject({
      stdout: 'none\n',
    })
  }, 120_000)

  it('the runCommand tool starts a background server the platform tracks; it outlives the turn and the pause', async () => {
    const runCommand = async (session: ReturnType<typeof createSandboxSession>, input: object) => {
      const tools = sandboxTools({ session })
      const execute = tools.runCommand.execute as (input: object, options: object) => Promise<unknown>
      return (await execute(input, { toolCallId: randomUUID(), messages: [] })) as Record<string, unknown>
    }
    const probe = `python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8765/').status)"`
    let sandboxId: string
    let pid: number
    {
      await using session = createSandboxSession({ sessions, conversationId })
      const started = await runCommand(session, {
        command: 'python3 -m http.server 8765 --bind 127.0.0.1',
        background: true,
        setup: true,
      })
      expect(started).toMatchObject({ background: true, pid: expect.any(Number) })
      // Never journalled: replaying a server as a setup step would wait on it forever.
      expect(String(started.notice)).toMatch(/not recorded/)
      pid = started.pid as number
      const up = await runCommand(session, {
        command: `for i in $(seq 50); do ${probe} && exit 0; sleep 0.1; done; exit 1`,
      })
      expect(up).toMatchObject({ exitCode: 0, stdout: expect.stringContaining('200') })
      sandboxId = session.report!.sandboxId
      const processes = await (await session.ready()).listProcesses()
      expect(processes.map((process) => process.pid)).toContain(pid)
    }
    expect(host.getSandbox(sandboxId)?.state).toBe('paused')
    await using next = createSandboxSession({ sessions, conversationId })
    expect(await runCommand(next, { command: probe })).toMatchObject({ exitCode: 0 })
    expect(next.report?.survived.processes).toBe(true)
    expect((await (await next.ready()).listProcesses()).map((process) => process.pid)).toContain(pid)
    await (await next.ready()).killProcess(pid)
  }, 120_000)
})
