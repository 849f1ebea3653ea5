// The package as an adapter sees it: a session over a real session manager (memory store, core's mock
// provider) and the tool specs called the way a framework calls them, with no framework in the way.
import { randomUUID } from 'node:crypto'
import {
  createMemorySessionStore,
  createSessionManager,
  SandkeepError,
  type SessionManager,
} from '@sandkeep/core'
import { createMockProvider, type MockProvider } from '@sandkeep/testing'
import { beforeEach, describe, expect, it } from 'vitest'
import {
  createSandboxSession,
  createSandboxTools,
  type SandboxToolSpecs,
  type ToolProgressResult,
} from './index.js'

let provider: MockProvider
let sessions: SessionManager
let conversationId: string

beforeEach(() => {
  provider = createMockProvider()
  sessions = createSessionManager({
    store: createMemorySessionStore(),
    provider,
    retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 5 },
  })
  conversationId = `conv-${randomUUID()}`
})

/** The spec's result, whether it returned it or streamed it (the last value of the generator). */
async function resultOf<T>(value: Promise<T> | AsyncGenerator<T>): Promise<{ result: T; partials: T[] }> {
  if (value instanceof Promise) return { result: await value, partials: [] }
  const seen: T[] = []
  for await (const item of value) seen.push(item)
  return { result: seen.at(-1) as T, partials: seen.slice(0, -1) }
}

describe('createSandboxTools', () => {
  it('gives one spec per tool: its name, a description and a zod input schema that checks the input', () => {
    const tools: SandboxToolSpecs = createSandboxTools()
    expect(Object.keys(tools).sort()).toEqual(
      ['listFiles', 'previewUrl', 'readFile', 'runCode', 'runCommand', 'writeFile'].sort(),
    )
    for (const [key, spec] of Object.entries(tools)) {
      expect(spec.name).toBe(key)
      expect(spec.description.length).toBeGreaterThan(20)
    }
    expect(tools.runCode.inputSchema.safeParse({ code: 'x = 1', language: 'python' }).success).toBe(true)
    expect(tools.runCode.inputSchema.safeParse({ code: '', language: 'ruby' }).success).toBe(false)
    expect(tools.previewUrl.inputSchema.safeParse({ port: 70_000 }).success).toBe(false)
    expect(() => createSandboxTools({ maxOutputChars: -1 })).toThrow(SandkeepError)
    expect(() => createSandboxTools({ session: {} as never })).toThrow(SandkeepError)
  })

  it('runs in the bound session: code keeps its variables, files are written, and end() pauses once', async () => {
    const session = createSandboxSession({ sessions, conversationId })
    const tools = createSandboxTools({ session })
    expect(await tools.runCode.execute({ code: 'x = 41' })).toMatchObject({ stdout: '' })
    expect(await tools.runCode.execute({ code: 'x' })).toMatchObject({ result: '41' })
    expect(await tools.writeFile.execute({ path: 'notes.txt', content: 'kept\n' })).toEqual({
      path: '/home/user/notes.txt',
      bytes: 5,
    })
    expect(await tools.runCommand.execute({ command: 'cat /home/user/notes.txt' })).toEqual({
      exitCode: 0,
      stdout: 'kept\n',
      stderr: '',
    })
    expect(provider.callsOf('create')).toHaveLength(1)
    const report = await session.end()
    expect(report?.action).toBe('paused')
    expect(provider.callsOf('pause')).toHaveLength(1)
    // Ended: a later call is a result that says so, not a throw.
    expect(await tools.runCode.execute({ code: 'x' })).toMatchObject({ code: 'TURN_ENDED' })
  })

  it('uses the sandbox each call brings when bound to none, and says so as a result when there is none', async () => {
    const tools = createSandboxTools()
    expect(await tools.runCommand.execute({ command: 'echo hi' })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      error: expect.stringMatching(/No sandbox/),
    })
    const sandbox = createSandboxSession({ sessions, conversationId })
    expect(await tools.runCommand.execute({ command: 'echo hi' }, { sandbox })).toMatchObject({
      exitCode: 0,
      stdout: 'hi\n',
    })
    await sandbox.end()
  })

  it('streams with streamOutput: an async generator whose last value is the complete result', async () => {
    const session = createSandboxSession({ sessions, conversationId })
    const tools = createSandboxTools({ session, streamOutput: true })
    const { result, partials } = await resultOf(tools.runCommand.execute({ command: 'echo streamed' }))
    expect(result).toMatchObject({ exitCode: 0, stdout: 'streamed\n' })
    for (const partial of partials) expect((partial as ToolProgressResult).running).toBe(true)
    await session.end()
  })
})

describe('createSandboxSession beforeBegin', () => {
  it('is awaited once, before the turn begins, by whichever call comes first', async () => {
    let calls = 0
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const session = createSandboxSession({
      sessions,
      conversationId,
      beforeBegin: async () => {
        calls += 1
        await gate
      },
    })
    const first = session.runCommand('echo one')
    const second = session.runCommand('echo two')
    // Both wait on the hook; nothing reached the platform (or the store's lease) yet.
    await Promise.resolve()
    expect(calls).toBe(1)
    expect(session.started).toBe(false)
    expect(provider.callsOf('create')).toHaveLength(0)
    release()
    expect((await first).stdout).toBe('one\n')
    expect((await second).stdout).toBe('two\n')
    expect(calls).toBe(1)
    await session.end()
  })

  it('fails the call that ran it, and the next call tries again', async () => {
    let calls = 0
    const session = createSandboxSession({
      sessions,
      conversationId,
      beforeBegin: async () => {
        calls += 1
        if (calls === 1) throw new SandkeepError({ code: 'CHECKPOINT_NOT_FOUND', message: 'no such point' })
      },
    })
    const tools = createSandboxTools({ session })
    expect(await tools.runCommand.execute({ command: 'echo x' })).toMatchObject({
      code: 'CHECKPOINT_NOT_FOUND',
    })
    expect(provider.callsOf('create')).toHaveLength(0)
    expect(await tools.runCommand.execute({ command: 'echo x' })).toMatchObject({ exitCode: 0 })
    expect(calls).toBe(2)
    await session.end()
  })

  it('must be a function', () => {
    expect(() => createSandboxSession({ sessions, conversationId, beforeBegin: 'soon' as never })).toThrow(
      SandkeepError,
    )
  })
})
