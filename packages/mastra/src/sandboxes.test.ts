import { RequestContext } from '@mastra/core/request-context'
import { createMemorySessionStore, createSessionManager, SandkeepError } from '@sandkeep/core'
import { createMockProvider } from '@sandkeep/testing/mock-provider'
import { describe, expect, it } from 'vitest'
import { SandkeepMastraSandbox } from './sandbox.js'
import { createSandkeepSandboxes, threadOf } from './sandboxes.js'

function rig() {
  const provider = createMockProvider()
  const sessions = createSessionManager({ store: createMemorySessionStore(), provider })
  return { provider, sessions }
}

function contextWith(entries: Array<[string, unknown]>): RequestContext {
  const context: RequestContext = new RequestContext()
  for (const [key, value] of entries) context.set(key, value as never)
  return context
}

describe('threadOf', () => {
  it('reads the reserved keys first, then the agent memory', () => {
    const reserved = contextWith([
      ['mastra__threadId', 't1'],
      ['mastra__resourceId', 'r1'],
      ['MastraMemory', { thread: { id: 't2' }, resourceId: 'r2' }],
    ])
    expect(threadOf(reserved)).toMatchObject({ threadId: 't1', resourceId: 'r1' })
    const memory = contextWith([['MastraMemory', { thread: { id: 't2' }, resourceId: 'r2' }]])
    expect(threadOf(memory)).toMatchObject({ threadId: 't2', resourceId: 'r2' })
  })

  it('says how to pass a thread when there is none', () => {
    expect(() => threadOf(new RequestContext())).toThrow(/memory: \{ thread, resource \}/)
    expect(() => threadOf(undefined)).toThrow(SandkeepError)
  })
})

describe('createSandkeepSandboxes', () => {
  it('resolves one sandbox per tenant and thread, the tenant from the resource when asked', async () => {
    const { sessions, provider } = rig()
    const sandboxes = createSandkeepSandboxes({
      sessions,
      tenant: ({ resourceId }) => resourceId ?? 'default',
    })
    const context = contextWith([
      ['mastra__threadId', 'thread-1'],
      ['mastra__resourceId', 'acme'],
    ])
    const sandbox = (await sandboxes.sandbox({ requestContext: context })) as SandkeepMastraSandbox
    expect(sandbox).toBe(sandboxes.forThread('thread-1', { tenant: 'acme' }))
    expect(sandbox.tenant).toBe('acme')
    expect(sandboxes.sandboxCacheKey({ requestContext: context })).toBe('acme\u0000thread-1')
    expect(sandboxes.forThread('thread-1', { tenant: 'other' })).not.toBe(sandbox)
    // Resolving made no call: the turn begins when a tool first uses the sandbox.
    expect(provider.callsOf('create')).toHaveLength(0)
  })

  it('refuses bad input before any call', async () => {
    const { sessions, provider } = rig()
    expect(() => createSandkeepSandboxes({ sessions, tenant: 'not a tenant' })).toThrow(SandkeepError)
    expect(() => createSandkeepSandboxes({} as never)).toThrow(/sessions/)
    const sandboxes = createSandkeepSandboxes({ sessions, tenant: () => 'bad tenant!' })
    const context = contextWith([['mastra__threadId', 'thread-1']])
    expect(() => sandboxes.sandbox({ requestContext: context })).toThrow(/tenant/)
    expect(() => sandboxes.forThread('')).toThrow(/conversationId/)
    expect(() => new SandkeepMastraSandbox({ sessions, threadId: 'x'.repeat(5000) })).toThrow(SandkeepError)
    await expect(sandboxes.forThread('ok').executeCommand('')).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(sandboxes.forThread('ok').restore('')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(
      sandboxes.cloneThread(
        { cloneThread: async () => ({ thread: { id: 'n' } }) as never },
        {
          sourceThreadId: 'ok',
          newThreadId: '',
        },
      ),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(provider.callsOf('create')).toHaveLength(0)
  })

  it('endTurn of a thread that never started does nothing', async () => {
    const { sessions, provider } = rig()
    const sandboxes = createSandkeepSandboxes({ sessions })
    await sandboxes.endTurn('never')
    sandboxes.forThread('never')
    await sandboxes.endAllTurns()
    expect(provider.callsOf('create')).toHaveLength(0)
    expect(provider.callsOf('pause')).toHaveLength(0)
  })

  it('a start on the mock provider reports created, then connected', async () => {
    const { sessions } = rig()
    const sandbox = createSandkeepSandboxes({ sessions }).forThread('t')
    expect(await sandbox._start()).toEqual({ outcome: 'created' })
    await sandbox._stop()
    expect(await sandbox._start()).toEqual({ outcome: 'connected' })
    expect(sandbox.notice).toBeUndefined()
    await sandbox._destroy()
    expect(await sessions.getSession('t')).toBeNull()
  })

  it('a start after a failed onStart hook goes on with the turn it began', async () => {
    const { sessions, provider } = rig()
    let failures = 1
    const sandboxes = createSandkeepSandboxes({
      sessions,
      onStart: () => {
        if (failures-- > 0) throw new Error('setup failed')
      },
    })
    const sandbox = sandboxes.forThread('h')
    await expect(sandbox._start()).rejects.toThrow(/setup failed/)
    expect(sandbox.status).toBe('error')
    expect(await sandbox._start()).toEqual({ outcome: 'created' })
    expect(provider.callsOf('create')).toHaveLength(1)
    expect(await sandboxes.endSession('h')).toBe(true)
    expect(sandbox.endReport?.action).toBe('paused')
    expect(await sessions.getSession('h')).toBeNull()
  })
})

describe('withTurn', () => {
  it('ends the thread turn after the call, also when it throws', async () => {
    const { sessions, provider } = rig()
    const sandboxes = createSandkeepSandboxes({ sessions })
    const sandbox = sandboxes.forThread('w')
    await expect(
      sandboxes.withTurn('w', async () => {
        await sandbox.executeCommand('echo hi')
        throw new Error('the model failed')
      }),
    ).rejects.toThrow('the model failed')
    expect(sandbox.status).toBe('stopped')
    expect(sandbox.endReport?.action).toBe('paused')
    expect(provider.callsOf('pause')).toHaveLength(1)
  })
})
