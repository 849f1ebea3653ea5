import { Manifest } from '@openai/agents-core/sandbox'
import { createMemorySessionStore, createSessionManager, SandkeepError } from '@sandkeep/core'
import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import { createSandkeepSandboxClient } from './client.js'
import { manifestSteps, unrecordedSteps, withClientRoot } from './manifest.js'
import { resolveWorkspacePath } from './paths.js'

function rig() {
  // The mock's shell knows a few commands; the manifest's `mkdir -p` is one it is taught here.
  const provider = createMockProvider({
    onCommand: (command) =>
      command.startsWith('mkdir -p ') ? { exitCode: 0, stdout: '', stderr: '' } : undefined,
  })
  const sessions = createSessionManager({ store: createMemorySessionStore(), provider })
  return { provider, sessions, client: createSandkeepSandboxClient({ sessions }) }
}

describe('createSandkeepSandboxClient', () => {
  it('refuses bad options when made', () => {
    const { sessions } = rig()
    expect(() => createSandkeepSandboxClient({ sessions, colour: 'red' } as never)).toThrow(/unknown option/)
    expect(() => createSandkeepSandboxClient({} as never)).toThrow(SandkeepError)
    expect(() => createSandkeepSandboxClient({ sessions, defaultRoot: 'relative' })).toThrow(/absolute/)
  })

  it('refuses a create without a conversation, or with unknown run options, before any sandbox call', async () => {
    const { provider, client } = rig()
    await expect(client.create({ options: {} as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(client.create({ options: { conversationId: 'c', colour: 'red' } })).rejects.toThrow(/colour/)
    await expect(
      client.create({ options: { conversationId: 'c', tenant: 'no spaces' } }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(
      client.create({
        options: { conversationId: 'c' },
        manifest: { entries: { repo: { type: 'git_repo', host: 'github.com', repo: 'a/b' } } } as never,
      }),
    ).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED' })
    expect(provider.calls).toEqual([])
  })

  it('serializes the conversation key only, and reads it back', async () => {
    const { client } = rig()
    const state = {
      conversationId: 'conv-1',
      tenant: 'acme',
      manifest: new Manifest(),
      environment: { TOKEN: 'secret' },
    }
    expect(await client.serializeSessionState(state)).toEqual({ conversationId: 'conv-1', tenant: 'acme' })
    const back = await client.deserializeSessionState({
      conversationId: 'conv-1',
      tenant: 'acme',
      manifest: {},
    })
    expect(back).toMatchObject({ conversationId: 'conv-1', tenant: 'acme' })
    expect(back.manifest.root).toBe('/home/user/workspace')
  })

  it.each([
    ['no conversation', { tenant: 'acme', manifest: {} }],
    ['an empty conversation', { conversationId: '', tenant: 'acme', manifest: {} }],
    ['a control character', { conversationId: 'a\u0007', tenant: 'acme', manifest: {} }],
    ['a bad tenant', { conversationId: 'a', tenant: 'a b', manifest: {} }],
    ['no manifest', { conversationId: 'a', tenant: 'acme' }],
  ])('refuses a state with %s', async (_name, record) => {
    const { client } = rig()
    await expect(client.deserializeSessionState(record)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
  })

  it('ends the turn on stop, and the session only when asked to', async () => {
    const { client, sessions } = rig()
    const session = await client.create({ options: { conversationId: 'conv-end' } })
    await session.stop()
    await session.shutdown()
    await session.delete()
    expect(session.turn.endReport?.action).toBe('paused')
    expect(await sessions.getSession('conv-end')).not.toBeNull()
    const again = await client.resume(session.state)
    expect(again.report?.outcome).toBe('resumed')
    await again.delete({ endSession: true })
    expect(await sessions.getSession('conv-end')).toBeNull()
  })

  it('ends the session on client.delete only with deleteEndsSession', async () => {
    const { sessions } = rig()
    const keeping = createSandkeepSandboxClient({ sessions })
    const ending = createSandkeepSandboxClient({ sessions, deleteEndsSession: true })
    const session = await keeping.create({ options: { conversationId: 'conv-del' } })
    await keeping.delete(session.state)
    expect(session.turn.endReport?.action).toBe('paused')
    expect(await sessions.getSession('conv-del')).not.toBeNull()
    await ending.delete(session.state)
    expect(await sessions.getSession('conv-del')).toBeNull()
  })

  it('makes no sandbox call in a lazy run that never uses the sandbox once its manifest is journaled', async () => {
    const { client, provider } = rig()
    const first = await client.create({ options: { conversationId: 'conv-lazy' } })
    await first.stop()
    const callsBefore = provider.calls.length
    const lazy = await client.create({ options: { conversationId: 'conv-lazy', lazy: true } })
    expect(lazy.report).toBeUndefined()
    await lazy.stop()
    expect(provider.calls.length).toBe(callsBefore)
  })

  it('journals the manifest once: a second create of the conversation does not write it again', async () => {
    const { client } = rig()
    const manifest = { entries: { 'a.txt': { type: 'file' as const, content: 'one' } } }
    const first = await client.create({ options: { conversationId: 'conv-m' }, manifest })
    const steps = await first.turn.journal.list()
    expect(steps).toHaveLength(2)
    await first.turn.sandbox.writeFile('/home/user/workspace/a.txt', 'changed by the agent')
    await first.stop()
    const second = await client.create({ options: { conversationId: 'conv-m' }, manifest })
    expect(await second.turn.journal.list()).toEqual(steps)
    expect(new TextDecoder().decode(await second.readFile({ path: 'a.txt' }))).toBe('changed by the agent')
    await second.stop()
  })
})

describe('manifest steps', () => {
  it('makes the root, then dirs and files parents first; the SDK default root becomes the client one', () => {
    const manifest = withClientRoot(
      new Manifest({
        entries: { src: { type: 'dir', children: { 'main.py': { type: 'file', content: 'print(1)' } } } },
      }),
      '/home/user/ws',
    )
    expect(manifestSteps(manifest)).toEqual([
      { kind: 'command', command: "mkdir -p '/home/user/ws'" },
      { kind: 'command', command: "mkdir -p '/home/user/ws/src'" },
      { kind: 'file', path: '/home/user/ws/src/main.py', content: 'print(1)' },
    ])
    expect(withClientRoot(new Manifest({ root: '/tmp/x' }), '/home/user/ws').root).toBe('/tmp/x')
  })

  it('refuses binary contents and keeps only steps the journal lacks', () => {
    const binary = new Manifest({
      entries: { 'b.bin': { type: 'file', content: new Uint8Array([0xff, 0xfe]) } },
    })
    expect(() => manifestSteps(binary)).toThrow(/not UTF-8/)
    const one = { kind: 'file' as const, path: '/a', content: 'x' }
    const two = { kind: 'file' as const, path: '/b', content: 'y' }
    expect(unrecordedSteps([one, two], [one])).toEqual([two])
  })

  it('resolves relative paths under the root and keeps absolute ones', () => {
    expect(resolveWorkspacePath('/home/user/ws', 'a/../b.txt')).toBe('/home/user/ws/b.txt')
    expect(resolveWorkspacePath('/home/user/ws', '/tmp/x')).toBe('/tmp/x')
    expect(resolveWorkspacePath('/home/user/ws', undefined)).toBe('/home/user/ws')
  })
})
