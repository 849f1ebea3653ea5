import { SandkeepError } from '@sandkeep/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createFakeSessions, type FakeSessions } from '../fake-sessions.test-support.js'
import { createSandboxSession, isSandkeepSandboxSession } from './index.js'

let fake: FakeSessions

beforeEach(async () => {
  fake = await createFakeSessions()
})
afterEach(async () => {
  await fake.cleanup()
})

const session = () =>
  createSandboxSession({ sessions: fake.sessions, conversationId: 'conv-1', workingDirectory: fake.home })

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = ''
  const decoder = new TextDecoder()
  for await (const chunk of stream) text += decoder.decode(chunk, { stream: true })
  return text
}

describe('createSandboxSession', () => {
  it('rejects bad ids and options before any I/O', () => {
    const bad = [
      { sessions: fake.sessions, conversationId: '' },
      { sessions: fake.sessions, conversationId: 'a\nb' },
      { sessions: fake.sessions, conversationId: 'x'.repeat(600) },
      { sessions: fake.sessions, conversationId: 'ok', tenant: 'bad tenant!' },
      { sessions: fake.sessions, conversationId: 'ok', workingDirectory: 'relative/dir' },
      { sessions: fake.sessions, conversationId: 'ok', commandTimeoutMs: -1 },
      { sessions: {} as never, conversationId: 'ok' },
    ]
    for (const options of bad) {
      expect(() => createSandboxSession(options as never)).toThrow(SandkeepError)
    }
    expect(fake.begins).toHaveLength(0)
  })

  it('begins the turn lazily, once, on the first call', async () => {
    const s = session()
    expect(isSandkeepSandboxSession(s)).toBe(true)
    expect(typeof s.description).toBe('string')
    expect(s.started).toBe(false)
    expect(fake.begins).toHaveLength(0)
    await Promise.all([
      s.writeTextFile({ path: 'a.txt', content: 'a' }),
      s.writeTextFile({ path: 'b.txt', content: 'b' }),
      s.run({ command: 'true' }),
    ])
    expect(fake.begins).toHaveLength(1)
    expect(fake.begins[0]?.options).toMatchObject({ tenant: 'default', lazy: true })
    expect(fake.resumes).toBe(1)
    expect(s.report?.outcome).toBe('created')
    await s.end()
    expect(fake.state).toBe('paused')
  })

  it('ending an unused session makes no store call', async () => {
    const s = session()
    expect(await s.end()).toBeUndefined()
    expect(fake.begins).toHaveLength(0)
    await expect(s.run({ command: 'true' })).rejects.toMatchObject({ code: 'TURN_ENDED' })
  })

  it('reads and writes text and bytes; a missing file is null; parent directories are created', async () => {
    await using s = session()
    expect(await s.readTextFile({ path: 'missing.txt' })).toBeNull()
    expect(await s.readBinaryFile({ path: 'missing.bin' })).toBeNull()
    expect(await s.readFile({ path: 'missing' })).toBeNull()
    await s.writeTextFile({ path: 'deep/er/notes.txt', content: 'one\ntwo\nthree\nfour' })
    expect(await s.readTextFile({ path: 'deep/er/notes.txt' })).toBe('one\ntwo\nthree\nfour')
    expect(await s.readTextFile({ path: `${fake.home}/deep/er/notes.txt`, startLine: 2, endLine: 3 })).toBe(
      'two\nthree\n',
    )
    expect(await s.readTextFile({ path: 'deep/er/notes.txt', startLine: 3, endLine: 99 })).toBe('three\nfour')
    expect(await s.readTextFile({ path: 'deep/er/notes.txt', startLine: 9 })).toBe('')
    await expect(s.readTextFile({ path: 'deep/er/notes.txt', startLine: 0 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    const bytes = new Uint8Array([0, 1, 2, 255])
    await s.writeBinaryFile({ path: 'bin/data.bin', content: bytes })
    expect(await s.readBinaryFile({ path: 'bin/data.bin' })).toEqual(bytes)
    await s.writeFile({
      path: 'streamed.txt',
      content: new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('hello '))
          c.enqueue(new TextEncoder().encode('stream'))
          c.close()
        },
      }),
    })
    const stream = await s.readFile({ path: 'streamed.txt' })
    expect(await readAll(stream!)).toBe('hello stream')
    await s.writeTextFile({ path: 'latin.txt', content: 'café', encoding: 'latin1' })
    expect(await s.readBinaryFile({ path: 'latin.txt' })).toEqual(new Uint8Array([99, 97, 102, 0xe9]))
    expect(await s.readTextFile({ path: 'latin.txt', encoding: 'latin1' })).toBe('café')
  })

  it('stats, lists and deletes', async () => {
    await using s = session()
    await s.writeTextFile({ path: 'dir/file.txt', content: '12345' })
    expect(await s.stat({ path: 'dir/file.txt' })).toEqual({ type: 'file', size: 5 })
    expect((await s.stat({ path: 'dir' }))?.type).toBe('directory')
    expect(await s.stat({ path: 'nope' })).toBeNull()
    expect(await s.listDirectory({ path: 'dir' })).toEqual([{ name: 'file.txt', type: 'file' }])
    expect(await s.listDirectory({ path: 'nope' })).toBeNull()
    await expect(s.deleteFile({ path: 'dir' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await s.deleteFile({ path: 'dir/file.txt' })).toBe(true)
    expect(await s.deleteFile({ path: 'dir/file.txt' })).toBe(false)
    expect(await s.listDirectory({ path: 'dir' })).toEqual([])
  })

  it('runs commands in the base directory with env; a non-zero exit is a result', async () => {
    await using s = session()
    await s.writeTextFile({ path: 'sub/x.txt', content: 'x' })
    expect(await s.run({ command: 'pwd' })).toEqual({ exitCode: 0, stdout: `${fake.home}\n`, stderr: '' })
    expect((await s.run({ command: 'ls', workingDirectory: 'sub' })).stdout).toBe('x.txt\n')
    expect((await s.run({ command: 'echo $GREETING', env: { GREETING: 'hi' } })).stdout).toBe('hi\n')
    expect(await s.run({ command: 'echo oops >&2; exit 3' })).toEqual({
      exitCode: 3,
      stdout: '',
      stderr: 'oops\n',
    })
  })

  it('spawns with streaming output, wait and kill', async () => {
    await using s = session()
    const child = await s.spawn({ command: 'echo first; echo err >&2; sleep 0.2; echo second' })
    const [out, err, exit] = await Promise.all([readAll(child.stdout), readAll(child.stderr), child.wait()])
    expect(out).toBe('first\nsecond\n')
    expect(err).toBe('err\n')
    expect(exit).toEqual({ exitCode: 0 })

    const long = await s.spawn({ command: 'echo started; sleep 30' })
    const reader = long.stdout.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('started\n')
    await long.kill()
    await long.kill()
    expect(await long.wait()).toEqual({ exitCode: -1 })
    expect((await reader.read()).done).toBe(true)

    await expect(s.spawn({ command: 'cat', stdin: true })).rejects.toMatchObject({
      code: 'CAPABILITY_UNSUPPORTED',
    })
  })

  it('honours abort signals: run, spawn wait() and an already-aborted signal', async () => {
    await using s = session()
    const controller = new AbortController()
    const running = s.run({ command: 'sleep 30', abortSignal: controller.signal })
    setTimeout(() => controller.abort(new Error('stop')), 100)
    await expect(running).rejects.toBeDefined()

    const spawnController = new AbortController()
    const child = await s.spawn({ command: 'sleep 30', abortSignal: spawnController.signal })
    spawnController.abort(new Error('stop spawn'))
    await expect(child.wait()).rejects.toThrow('stop spawn')

    await expect(
      s.readTextFile({ path: 'x', abortSignal: AbortSignal.abort(new Error('early')) }),
    ).rejects.toThrow('early')
  })

  it('end() kills what is still running, is idempotent, and later calls fail with TURN_ENDED', async () => {
    const s = session()
    const child = await s.spawn({ command: 'sleep 30' })
    const running = s.run({ command: 'sleep 30' })
    const [first, second] = await Promise.all([s.end(), s.end()])
    expect(first).toBe(second)
    expect(first?.action).toBe('paused')
    await expect(running).rejects.toBeDefined()
    await expect(child.wait()).rejects.toBeDefined()
    expect(fake.ends).toBe(1)
    await expect(s.readTextFile({ path: 'x' })).rejects.toMatchObject({ code: 'TURN_ENDED' })
    expect(s.ended).toBe(true)
  })

  it('gives the state-lost notice once per turn', async () => {
    fake.loseStateOnNextResume()
    await using s = session()
    await s.run({ command: 'true' })
    expect(s.report?.stateLost).toBe(true)
    expect(s.takeStateNotice()).toMatch(/memory did not survive/)
    expect(s.takeStateNotice()).toBeUndefined()
  })
})
