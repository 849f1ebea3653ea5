import { createServer } from 'node:net'
import { SandkeepError } from '@sandkeep/core'
import type { Experimental_SandboxSession } from 'ai'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFakeSessions, type FakeSessions } from './fake-sessions.test-support.js'
import { createSandboxSession, type SandkeepSandboxSession } from './sandbox-session/index.js'
import { sandboxTools } from './sandbox-tools.js'

let fake: FakeSessions
let session: SandkeepSandboxSession

beforeEach(async () => {
  fake = await createFakeSessions()
  session = createSandboxSession({
    sessions: fake.sessions,
    conversationId: 'conv-t',
    workingDirectory: fake.home,
  })
})
afterEach(async () => {
  await session.end()
  await fake.cleanup()
})

// Calls a tool the way the AI SDK does, with the execution options it passes.
async function call(
  tools: ReturnType<typeof sandboxTools>,
  name: keyof ReturnType<typeof sandboxTools>,
  input: Record<string, unknown>,
  experimental_sandbox?: Experimental_SandboxSession,
): Promise<Record<string, unknown>> {
  const execute = tools[name].execute as unknown as (
    input: unknown,
    options: unknown,
  ) => Promise<Record<string, unknown>>
  return execute(input, {
    toolCallId: 'c1',
    messages: [],
    context: {},
    ...(experimental_sandbox ? { experimental_sandbox } : {}),
  })
}

describe('sandboxTools', () => {
  it('rejects bad options', () => {
    expect(() => sandboxTools({ maxOutputChars: 0 })).toThrow(SandkeepError)
    expect(() => sandboxTools({ setupSteps: 'sometimes' as never })).toThrow(SandkeepError)
    expect(() => sandboxTools({ session: {} as never })).toThrow(SandkeepError)
    expect(() => sandboxTools({ maxImages: -1 })).toThrow(SandkeepError)
    expect(() => sandboxTools({ maxImageBytes: 0 })).toThrow(SandkeepError)
    expect(() => sandboxTools({ streamOutput: { intervalMs: 0 } })).toThrow(SandkeepError)
    expect(() => sandboxTools({ streamOutput: { every: 5 } as never })).toThrow(SandkeepError)
    expect(() => sandboxTools({ previewWaitMs: 0 })).toThrow(SandkeepError)
  })

  it("previewUrl gives the port's address and says whether a server listens there", async () => {
    const server = createServer((socket) => socket.end())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as { port: number }
    try {
      const tools = sandboxTools({ session, previewWaitMs: 300 })
      expect(await call(tools, 'previewUrl', { port, path: 'docs' })).toEqual({
        url: `http://127.0.0.1:${port}/docs`,
        port,
        listening: true,
        note: expect.stringContaining('give the user this URL'),
      })
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
    const closed = await call(sandboxTools({ session, previewWaitMs: 300 }), 'previewUrl', { port })
    expect(closed).toMatchObject({ url: `http://127.0.0.1:${port}`, listening: false })
    expect(closed.note).toContain('start the server')
  })

  it('previewUrl refuses a bad port, and a sandbox that routes no ports, as results', async () => {
    const tools = sandboxTools({ session })
    expect(await call(tools, 'previewUrl', { port: 70_000 })).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(fake.resumes).toBe(0)
    const plain = {
      run: async () => ({ exitCode: 0, stdout: '', stderr: '' }),
    } as unknown as Experimental_SandboxSession
    expect(await call(sandboxTools(), 'previewUrl', { port: 8000 }, plain)).toMatchObject({
      code: 'CAPABILITY_UNSUPPORTED',
    })
  })

  it('uses the experimental_sandbox of the call when not bound, and says so when there is none', async () => {
    const tools = sandboxTools()
    expect(await call(tools, 'runCommand', { command: 'echo hi' }, session)).toEqual({
      exitCode: 0,
      stdout: 'hi\n',
      stderr: '',
    })
    const missing = await call(tools, 'runCommand', { command: 'echo hi' })
    expect(missing).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(String(missing.error)).toContain('experimental_sandbox')
  })

  it('returns failing commands, missing files and code exceptions as results', async () => {
    const tools = sandboxTools({ session })
    expect(await call(tools, 'runCommand', { command: 'echo bad >&2; exit 7' })).toEqual({
      exitCode: 7,
      stdout: '',
      stderr: 'bad\n',
    })
    expect(await call(tools, 'readFile', { path: 'nope.txt' })).toMatchObject({ code: 'FILE_NOT_FOUND' })
    expect(await call(tools, 'listFiles', { path: 'nope' })).toMatchObject({ code: 'FILE_NOT_FOUND' })
    const failed = await call(tools, 'runCode', { code: 'undefinedThing + 1', language: 'javascript' })
    expect(failed.error).toMatch(/ReferenceError/)
  })

  it('keeps interpreter state across runCode calls and truncates long output', async () => {
    const tools = sandboxTools({ session, maxOutputChars: 50 })
    await call(tools, 'runCode', { code: 'var total = 40', language: 'javascript' })
    expect(await call(tools, 'runCode', { code: 'total + 2', language: 'javascript' })).toMatchObject({
      result: '42',
    })
    const long = await call(tools, 'runCommand', { command: 'seq 1 1000' })
    expect(String(long.stdout)).toContain('characters omitted')
    expect(String(long.stdout).startsWith('1\n2\n')).toBe(true)
    expect(String(long.stdout).endsWith('999\n1000\n')).toBe(true)
  })

  it('writes, reads with line ranges and lists files', async () => {
    const tools = sandboxTools({ session })
    expect(await call(tools, 'writeFile', { path: 'data/notes.md', content: 'a\nb\nc\n' })).toEqual({
      path: `${fake.home}/data/notes.md`,
      bytes: 6,
    })
    expect(await call(tools, 'readFile', { path: 'data/notes.md', startLine: 2, endLine: 2 })).toEqual({
      path: `${fake.home}/data/notes.md`,
      content: 'b\n',
      totalLines: 3,
    })
    expect(await call(tools, 'listFiles', { path: 'data' })).toEqual({
      path: `${fake.home}/data`,
      entries: [{ path: 'notes.md', type: 'file', size: 6 }],
    })
  })

  it('records successful setup steps when flagged (or always with setupSteps: all)', async () => {
    const tools = sandboxTools({ session })
    await call(tools, 'runCommand', { command: 'echo setup', setup: true })
    await call(tools, 'runCommand', { command: 'echo not setup' })
    await call(tools, 'runCommand', { command: 'exit 1', setup: true })
    await call(tools, 'writeFile', { path: 'cfg.json', content: '{}', setup: true })
    await call(tools, 'runCode', { code: 'var a = 1', language: 'javascript', setup: true })
    expect(fake.journal).toEqual([
      { kind: 'command', command: 'echo setup' },
      { kind: 'file', path: `${fake.home}/cfg.json`, content: '{}' },
      { kind: 'code', code: 'var a = 1', language: 'javascript' },
    ])
    const all = sandboxTools({ session, setupSteps: 'all' })
    await call(tools, 'runCommand', { command: 'mkdir sub' })
    await call(all, 'runCommand', { command: 'echo every', cwd: 'sub' })
    expect(fake.journal.at(-1)).toEqual({ kind: 'command', command: 'echo every', cwd: `${fake.home}/sub` })
  })

  it('puts the state-lost notice on the first result of the turn only', async () => {
    fake.loseStateOnNextResume()
    const tools = sandboxTools({ session })
    const first = await call(tools, 'runCommand', { command: 'true' })
    expect(Object.keys(first)[0]).toBe('notice')
    expect(first.notice).toMatch(/memory did not survive/)
    const second = await call(tools, 'runCommand', { command: 'true' })
    expect(second.notice).toBeUndefined()
  })

  it('works over any AI SDK sandbox, without persistent code state', async () => {
    // A minimal foreign SandboxSession that delegates to the sandkeep one but is not marked as sandkeep.
    const foreign: Experimental_SandboxSession = {
      description: 'foreign',
      readFile: (o) => session.readFile(o),
      readBinaryFile: (o) => session.readBinaryFile(o),
      readTextFile: (o) => session.readTextFile(o),
      writeFile: (o) => session.writeFile(o),
      writeBinaryFile: (o) => session.writeBinaryFile(o),
      writeTextFile: (o) => session.writeTextFile(o),
      stat: (o) => session.stat(o),
      listDirectory: (o) => session.listDirectory(o),
      deleteFile: (o) => session.deleteFile(o),
      spawn: session.spawn,
      run: (o) => session.run(o),
    }
    const tools = sandboxTools()
    expect(await call(tools, 'runCommand', { command: 'echo hi' }, foreign)).toMatchObject({ exitCode: 0 })
    await call(tools, 'writeFile', { path: `${fake.home}/f/g.txt`, content: 'x' }, foreign)
    expect(await call(tools, 'listFiles', { path: fake.home, depth: 2 }, foreign)).toMatchObject({
      entries: [
        { path: 'f', type: 'dir' },
        { path: 'f/g.txt', type: 'file' },
      ],
    })
    const code = await call(tools, 'runCode', { code: 'print(1+1)' }, foreign)
    expect(code.notice).toMatch(/do not persist/)
    const journalBefore = fake.journal.length
    const setup = await call(tools, 'runCommand', { command: 'true', setup: true }, foreign)
    expect(setup.notice).toMatch(/no journal/)
    expect(fake.journal.length).toBe(journalBefore)
  })
})

describe('readFile limits', () => {
  it('over any AI SDK sandbox, stops reading a stream past maxReadBytes and cancels it', async () => {
    let pulled = 0
    let cancelled = false
    // Stat says 10 bytes; the stream never ends (a file that grew after the stat, or a device).
    const endless: Experimental_SandboxSession = {
      description: 'endless',
      stat: async () => ({ type: 'file', size: 10 }),
      readFile: async () =>
        new ReadableStream<Uint8Array>({
          pull(controller) {
            pulled += 1
            controller.enqueue(new Uint8Array(64 * 1024).fill(120))
          },
          cancel() {
            cancelled = true
          },
        }),
    } as unknown as Experimental_SandboxSession
    const tools = sandboxTools({ maxReadBytes: 1024 * 1024 })
    const result = await call(tools, 'readFile', { path: '/data.txt' }, endless)
    expect(result).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(String(result.error)).toMatch(/more than 1048576 bytes/)
    expect(cancelled).toBe(true)
    // 1 MiB in 64 KiB chunks: the chunk that went past the limit, and at most the one queued behind it.
    expect(pulled).toBeLessThanOrEqual(18)
  })

  it('refuses a file over maxReadBytes and a directory, with a hint', async () => {
    const tools = sandboxTools({ session, maxReadBytes: 100 })
    await call(tools, 'writeFile', { path: 'big.log', content: 'x'.repeat(500) })
    const big = await call(tools, 'readFile', { path: 'big.log' })
    expect(big).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(String(big.error)).toMatch(/500 bytes.*runCommand/)
    await call(tools, 'runCommand', { command: 'mkdir -p somedir' })
    expect(await call(tools, 'readFile', { path: 'somedir' })).toMatchObject({ code: 'INVALID_ARGUMENT' })
    await call(tools, 'writeFile', { path: 'small.txt', content: 'ok' })
    expect(await call(tools, 'readFile', { path: 'small.txt' })).toMatchObject({ content: 'ok' })
  })
})
