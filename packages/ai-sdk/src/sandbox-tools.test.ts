import { SandkeepError } from '@sandkeep/core'
import type { Experimental_SandboxSession } from 'ai'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFakeSessions, type FakeSessions } from './fake-sessions.test-support.js'
import { createSandboxSession, type SandkeepSandboxSession } from './sandbox-session.js'
import {
  codeModelOutput,
  sandboxTools,
  shapeCodeResult,
  shapeCommandResult,
  shapeFileContent,
  shapeListing,
  toolError,
} from './sandbox-tools.js'

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

describe('result shaping', () => {
  it('cuts long outputs and keeps exit codes', () => {
    const shaped = shapeCommandResult({ exitCode: 2, stdout: 'x'.repeat(50), stderr: 'short' }, 20)
    expect(shaped.exitCode).toBe(2)
    expect(shaped.stdout).toContain('30 characters omitted')
    expect(shaped.stderr).toBe('short')
  })

  it('puts the exception name, value and a colour-free traceback in `error`', () => {
    const shaped = shapeCodeResult(
      {
        text: null,
        stdout: '',
        stderr: '',
        error: {
          name: 'NameError',
          value: "name 'x' is not defined",
          traceback: '\u001b[31mTraceback\u001b[0m line 1',
        },
      },
      1_000,
    )
    expect(shaped.error).toBe("NameError: name 'x' is not defined\nTraceback line 1")
    expect(shapeCodeResult({ text: '42', stdout: '', stderr: '', error: null }, 10)).toEqual({
      result: '42',
      stdout: '',
      stderr: '',
    })
  })

  it('selects file lines and tells the model how to read a long file', () => {
    expect(shapeFileContent('/f', 'a\nb\nc\n', 2, 3, 100)).toEqual({
      path: '/f',
      content: 'b\nc\n',
      totalLines: 3,
    })
    const long = shapeFileContent('/f', 'line\n'.repeat(1_000), undefined, undefined, 100)
    expect(long.content).toContain('characters omitted')
    expect(long.notice).toContain('1000 lines')
  })

  it('caps listings', () => {
    const entries = Array.from({ length: 5 }, (_, i) => ({ path: `f${i}`, type: 'file' as const }))
    const shaped = shapeListing('/d', entries, 3)
    expect(shaped.entries).toHaveLength(3)
    expect(shaped.notice).toContain('3 of 5')
  })

  // issue 16 (rich tool output): images reach the model as image parts, within a size bound; text for the rest.
  it('keeps rich outputs: images within the limits, text forms for the rest, nothing repeated', () => {
    const png = Buffer.from('a tiny png stand-in').toString('base64')
    const big = Buffer.alloc(2000).toString('base64')
    const shaped = shapeCodeResult(
      {
        text: 'Table()',
        results: [
          { isMainResult: false, text: '<Figure size 640x480 with 1 Axes>', png },
          { isMainResult: false, text: '<Figure>', png: big },
          { isMainResult: false, html: '<b>only html</b>' },
          { isMainResult: false, text: '<Figure>', jpeg: png },
          { isMainResult: true, text: 'Table()', json: { rows: 1 } },
        ],
        stdout: '',
        stderr: '',
        error: null,
      },
      100,
      { maxImageBytes: 1000, maxImages: 1 },
    )
    expect(shaped.result).toBe('Table()')
    expect(shaped.outputs).toEqual([
      // The image speaks for itself: its repr text is kept only as plain text next to it.
      {
        main: false,
        text: '<Figure size 640x480 with 1 Axes>',
        format: 'text',
        image: { mediaType: 'image/png', base64: png },
      },
      {
        main: false,
        text: '<Figure>',
        format: 'text',
        note: expect.stringMatching(/2000 bytes was left out: over the 1000-byte limit/),
      },
      { main: false, text: '<b>only html</b>', format: 'html' },
      {
        main: false,
        text: '<Figure>',
        format: 'text',
        note: expect.stringMatching(/at most 1 images per call/),
      },
      // The main value's plain text is `result`; its JSON form adds nothing the model needs twice.
    ])
    // A cell whose only result is its plain value gets no `outputs` at all (the common case stays as it was).
    const plain = shapeCodeResult(
      { text: '2', results: [{ isMainResult: true, text: '2' }], stdout: '', stderr: '', error: null },
      100,
    )
    expect(plain).toEqual({ result: '2', stdout: '', stderr: '' })
  })

  it('sends images as image parts after the JSON text, and plain JSON when there is none', () => {
    const png = Buffer.from('png bytes').toString('base64')
    const withImage = codeModelOutput({
      result: null,
      stdout: 'plotted\n',
      stderr: '',
      outputs: [
        { main: false, text: '<Figure>', format: 'text', image: { mediaType: 'image/png', base64: png } },
      ],
    })
    expect(withImage).toEqual({
      type: 'content',
      value: [
        { type: 'text', text: expect.any(String) },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: png } },
      ],
    })
    const text = withImage.type === 'content' ? withImage.value[0] : undefined
    const described = JSON.parse(text && 'text' in text ? text.text : '{}')
    expect(described.stdout).toBe('plotted\n')
    expect(described.outputs[0].image).toBe('image/png, attached after this JSON as image 1')
    expect(JSON.stringify(described)).not.toContain(png)
    expect(codeModelOutput({ result: '2', stdout: '', stderr: '' })).toEqual({
      type: 'json',
      value: { result: '2', stdout: '', stderr: '' },
    })
    expect(codeModelOutput({ error: 'boom' })).toEqual({ type: 'json', value: { error: 'boom' } })
  })

  it('turns errors into results', () => {
    expect(toolError(new SandkeepError({ code: 'TIMEOUT', message: 'took too long' }))).toEqual({
      error: 'took too long',
      code: 'TIMEOUT',
    })
    expect(toolError(new DOMException('x', 'AbortError'))).toMatchObject({ code: 'ABORTED' })
    expect(toolError(new Error('boom'))).toEqual({ error: 'boom' })
  })
})

describe('sandboxTools', () => {
  it('rejects bad options', () => {
    expect(() => sandboxTools({ maxOutputChars: 0 })).toThrow(SandkeepError)
    expect(() => sandboxTools({ setupSteps: 'sometimes' as never })).toThrow(SandkeepError)
    expect(() => sandboxTools({ session: {} as never })).toThrow(SandkeepError)
    expect(() => sandboxTools({ maxImages: -1 })).toThrow(SandkeepError)
    expect(() => sandboxTools({ maxImageBytes: 0 })).toThrow(SandkeepError)
    expect(() => sandboxTools({ streamOutput: { intervalMs: 0 } })).toThrow(SandkeepError)
    expect(() => sandboxTools({ streamOutput: { every: 5 } as never })).toThrow(SandkeepError)
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
