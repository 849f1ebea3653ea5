import { randomUUID } from 'node:crypto'
import { getEventListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { SandkeepError } from './errors.js'
import { codeCheck, customCheck, fileCheck, portCheck, processCheck } from './health.js'
import { createMemorySessionStore } from './memory-store.js'
import type { SandboxHandle, SandboxProvider } from './sandbox-provider.js'
import { createSessionManager, hashConversationId } from './session-manager.js'
import type { SessionManagerEvents, SessionManagerOptions, Turn } from './session-manager-types.js'
import type { SessionStore } from './session-store.js'
import { createMockProvider, type MockProvider, type MockProviderOptions } from './test/mock-provider.js'

function setup(
  options: Partial<SessionManagerOptions> = {},
  providerOptions: MockProviderOptions = {},
): {
  provider: MockProvider
  store: SessionStore
  sessions: ReturnType<typeof createSessionManager>
  id: string
} {
  const provider = createMockProvider(providerOptions)
  const store = createMemorySessionStore()
  const sessions = createSessionManager({
    store,
    provider,
    retry: { retries: 4, minTimeoutMs: 1, maxTimeoutMs: 5 },
    ...options,
  })
  return { provider, store, sessions, id: `conv-${randomUUID()}` }
}

function record<E extends keyof SessionManagerEvents>(
  sessions: ReturnType<typeof createSessionManager>,
  event: E,
): SessionManagerEvents[E][] {
  const seen: SessionManagerEvents[E][] = []
  sessions.on(event, (payload) => seen.push(payload))
  return seen
}

describe('createSessionManager: turn lifecycle', () => {
  it('creates on the first turn with sandkeep metadata and no internet, pauses at the end, resumes next turn', async () => {
    const { provider, sessions, id } = setup()
    const turn = await sessions.beginTurn(id, { tenant: 'acme' })
    expect(turn.report?.outcome).toBe('created')
    expect(turn.report?.stateLost).toBe(false)
    const [sandbox] = provider.sandboxes.values()
    expect(sandbox?.metadata).toEqual({
      'sandkeep.tenant': 'acme',
      'sandkeep.session': hashConversationId(id),
      'sandkeep.version': '0.1.0',
    })
    expect(JSON.stringify(sandbox?.metadata)).not.toContain(id)
    expect(sandbox?.createOptions.allowInternetAccess).toBe(false)
    await turn.sandbox.runCode('x = 41 + 1')
    await turn.sandbox.writeFile('/home/user/data.txt', 'hello')
    const end = await turn.end()
    expect(end.action).toBe('paused')
    expect(end.last).toBe(true)
    expect(sandbox?.state).toBe('paused')

    const stored = await sessions.getSession(id, { tenant: 'acme' })
    expect(stored?.sandboxId).toBe(sandbox?.id)
    expect(stored?.state).toBe('paused')
    expect(stored?.turnCount).toBe(1)
    expect(stored?.manifest?.memory?.[0]?.language).toBe('python')

    await sessions.withTurn(
      id,
      async (next) => {
        expect(next.report?.outcome).toBe('resumed')
        expect(next.report?.survived).toEqual({ memory: true, filesystem: true, processes: null })
        expect((await next.sandbox.runCode('x')).text).toBe('42')
        expect(await next.sandbox.readFile('/home/user/data.txt')).toBe('hello')
      },
      { tenant: 'acme' },
    )
    expect(provider.callsOf('create')).toHaveLength(1)
    expect(provider.callsOf('connect')).toHaveLength(1)
    expect(provider.callsOf('pause')).toHaveLength(2)
    const after = await sessions.getSession(id, { tenant: 'acme' })
    expect(after?.turnCount).toBe(2)
    expect(after?.pausedSeconds).toBeGreaterThanOrEqual(0)
    expect(after?.runningSeconds).toBeGreaterThan(0)
  })

  it('rejects bad ids and options before any I/O', async () => {
    const { provider, store, sessions } = setup()
    let storeCalls = 0
    const counted = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          storeCalls++
          return value.apply(target, args)
        }
      },
    })
    const guarded = createSessionManager({ store: counted, provider })
    for (const bad of ['', 'a\nb', 'x'.repeat(600), 42 as unknown as string, null as unknown as string]) {
      await expect(guarded.beginTurn(bad)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }
    await expect(guarded.beginTurn('ok', { tenant: 'bad tenant!' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(guarded.beginTurn('ok', { lazy: 'yes' as unknown as boolean })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(guarded.beginTurn('ok', { colour: 1 } as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(guarded.endSession('')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(guarded.getSession('a\u0000')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(storeCalls).toBe(0)
    expect(provider.calls).toHaveLength(0)
    expect(() => createSessionManager({ store, provider, onTurnEnd: 'sleep' as never })).toThrow(
      SandkeepError,
    )
    expect(() => createSessionManager({ store, provider, leaseMs: -1 })).toThrow(/leaseMs/)
    expect(() => createSessionManager({ store, provider, extra: 1 } as never)).toThrow(/unknown option/)
    expect(() =>
      createSessionManager({ store, provider, sandbox: { metadata: { 'sandkeep.tenant': 'x' } } }),
    ).toThrow(/sandkeep writes it/)
    void sessions
  })

  it('refuses onTurnEnd pause when the provider cannot pause', () => {
    const provider = createMockProvider({ without: ['pause'] })
    expect(() => createSessionManager({ store: createMemorySessionStore(), provider })).toThrow(
      expect.objectContaining({ code: 'CAPABILITY_UNSUPPORTED' }),
    )
    expect(() =>
      createSessionManager({ store: createMemorySessionStore(), provider, onTurnEnd: 'keep' }),
    ).not.toThrow()
  })

  it('lazy turns make no provider call until the sandbox is used', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async (turn) => turn.sandbox.writeFile('/home/user/a', '1'))
    provider.clearCalls()
    const untouched = await sessions.beginTurn(id, { lazy: true })
    expect(untouched.started).toBe(false)
    expect(untouched.report).toBeUndefined()
    expect(() => untouched.sandbox.id).toThrow(/ready/)
    const end = await untouched.end()
    expect(end.action).toBe('none')
    expect(provider.calls).toHaveLength(0)

    const used = await sessions.beginTurn(id, { lazy: true })
    expect(provider.calls).toHaveLength(0)
    expect(await used.sandbox.readFile('/home/user/a')).toBe('1')
    expect(used.started).toBe(true)
    expect(used.report?.outcome).toBe('resumed')
    expect(provider.callsOf('connect')).toHaveLength(1)
    await used.end()
    expect(provider.callsOf('pause')).toHaveLength(1)
  })

  it('withTurn ends the turn when the body throws, and rethrows; end is idempotent and the handle is closed after', async () => {
    const { provider, sessions, id } = setup()
    let captured: Awaited<ReturnType<typeof sessions.beginTurn>> | undefined
    await expect(
      sessions.withTurn(id, async (turn) => {
        captured = turn
        throw new Error('agent failed')
      }),
    ).rejects.toThrow('agent failed')
    expect(captured?.endReport?.action).toBe('paused')
    const again = await captured?.end()
    expect(again).toBe(captured?.endReport)
    expect(provider.callsOf('pause')).toHaveLength(1)
    await expect(captured?.sandbox.runCommand('true')).rejects.toMatchObject({ code: 'TURN_ENDED' })
    expect(captured?.signal.aborted).toBe(true)
  })

  it('await using ends the turn', async () => {
    const { provider, sessions, id } = setup()
    {
      await using turn = await sessions.beginTurn(id)
      await turn.sandbox.runCommand('true')
    }
    expect(provider.callsOf('pause')).toHaveLength(1)
  })

  it('emits turn-start, resume-end, health-check, turn-end and pause-end with reports', async () => {
    const { sessions, id } = setup()
    const starts = record(sessions, 'turn-start')
    const resumes = record(sessions, 'resume-end')
    const ends = record(sessions, 'turn-end')
    const pauses = record(sessions, 'pause-end')
    const checks = record(sessions, 'health-check')
    await sessions.withTurn(id, async () => {})
    await sessions.withTurn(id, async () => {})
    expect(starts).toHaveLength(2)
    expect(resumes.map((r) => r.report.outcome)).toEqual(['created', 'resumed'])
    expect(ends.map((e) => e.end.action)).toEqual(['paused', 'paused'])
    expect(pauses).toHaveLength(2)
    expect(checks.map((c) => c.result.name)).toEqual(['memory', 'filesystem', 'processes'])
    expect(resumes[1]?.report.timings.totalMs).toBeGreaterThanOrEqual(
      resumes[1]?.report.timings.connectMs ?? 0,
    )
  })
})

describe('createSessionManager: resume ladder', () => {
  it('retries transient connect failures (502 twice, 409 transitioning) and counts them', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    provider.failNext('connect', 'SANDBOX_UNAVAILABLE', { times: 2, message: '502 Bad Gateway' })
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.outcome).toBe('resumed')
      expect(turn.report?.retries).toBe(2)
    })
    expect(provider.callsOf('connect')).toHaveLength(3)
  })

  it('honours Retry-After on a 429', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    provider.failNext('connect', 'SANDBOX_UNAVAILABLE', { retryAfterMs: 300, message: '429' })
    const started = Date.now()
    await sessions.withTurn(id, async () => {})
    expect(Date.now() - started).toBeGreaterThanOrEqual(280)
  })

  it('gives up after the retry budget and keeps the session', async () => {
    const { provider, sessions, id } = setup({ retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 2 } })
    await sessions.withTurn(id, async () => {})
    const before = await sessions.getSession(id)
    provider.failNext('connect', 'SANDBOX_UNAVAILABLE', { times: 5 })
    await expect(sessions.beginTurn(id)).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' })
    expect(provider.callsOf('connect')).toHaveLength(3)
    expect((await sessions.getSession(id))?.sandboxId).toBe(before?.sandboxId)
    expect(provider.callsOf('create')).toHaveLength(1)
  })

  it('throws auth errors at once without retrying or creating', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    provider.failNext('connect', 'PROVIDER_AUTH')
    await expect(sessions.beginTurn(id)).rejects.toMatchObject({ code: 'PROVIDER_AUTH' })
    expect(provider.callsOf('connect')).toHaveLength(1)
    expect(provider.callsOf('create')).toHaveLength(1)
  })

  it('wraps an unclassified provider error as PROVIDER_ERROR with the cause', async () => {
    const { provider, sessions, id } = setup()
    const boom = new Error('boom')
    provider.failNext('create', boom)
    const error = await sessions.beginTurn(id).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'PROVIDER_ERROR', cause: boom })
  })

  it('recreates a sandbox that expired, replays the journal and reports stateLost', async () => {
    const { provider, sessions, id } = setup()
    const rehydrates = record(sessions, 'rehydrate')
    let first = ''
    await sessions.withTurn(id, async (turn) => {
      first = (await turn.ready()).id
      await turn.sandbox.runCode('x = 7')
      await turn.journal.record({ kind: 'code', code: 'x = 7' })
      await turn.journal.record({ kind: 'file', path: '/home/user/cfg', content: 'on' })
    })
    provider.expire(first)
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report).toMatchObject({
        outcome: 'recreated',
        stateLost: true,
        previousSandboxId: first,
        rehydratedSteps: 2,
      })
      expect(turn.report?.survived).toEqual({ memory: false, filesystem: false, processes: false })
      expect((await turn.sandbox.runCode('x')).text).toBe('7')
      expect(await turn.sandbox.readFile('/home/user/cfg')).toBe('on')
    })
    expect(rehydrates.at(-1)).toMatchObject({ reason: 'recreated', steps: 2 })
    const stored = await sessions.getSession(id)
    expect(stored?.sandboxId).not.toBe(first)
    expect(provider.sandboxes.has(stored?.sandboxId ?? '')).toBe(true)
  })

  it('two overlapping turns that both find the sandbox gone end up on one new sandbox, rehydrated once', async () => {
    const { provider, sessions, id } = setup()
    const rehydrates = record(sessions, 'rehydrate')
    let first = ''
    await sessions.withTurn(id, async (turn) => {
      first = (await turn.ready()).id
      await turn.journal.record({ kind: 'code', code: 'v = 3' })
    })
    provider.expire(first)
    const turns = await Promise.all([sessions.beginTurn(id), sessions.beginTurn(id)])
    expect(turns.map((t) => t.report?.outcome)).toEqual(['recreated', 'recreated'])
    expect(turns[0]?.report?.sandboxId).toBe(turns[1]?.report?.sandboxId)
    expect(provider.sandboxes.size).toBe(1)
    expect(rehydrates.filter((r) => r.reason === 'recreated')).toHaveLength(1)
    for (const turn of turns) expect((await turn.sandbox.runCode('v')).text).toBe('3')
    await Promise.all(turns.map((t) => t.end()))
    expect((await sessions.getSession(id))?.sandboxId).toBe(turns[0]?.report?.sandboxId)
  })

  it('follows a connect that returns another sandbox id and records it (fenced)', async () => {
    const { provider, sessions, id } = setup()
    let first = ''
    await sessions.withTurn(id, async (turn) => {
      first = (await turn.ready()).id
    })
    provider.remapNextConnect(first)
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.sandboxId).not.toBe(first)
      expect(turn.report?.previousSandboxId).toBe(first)
      expect(turn.report?.stateLost).toBe(false)
    })
    const stored = await sessions.getSession(id)
    expect(stored?.sandboxId).not.toBe(first)
    expect(provider.sandboxes.has(stored?.sandboxId ?? '')).toBe(true)
  })

  it('never uses a sandbox whose metadata names another tenant', async () => {
    const provider = createMockProvider()
    const store = createMemorySessionStore()
    const sessions = createSessionManager({ store, provider })
    const foreign = await provider.create({ metadata: { 'sandkeep.tenant': 'evil' } })
    // A session of tenant 'acme' whose mapping was tampered with to point at it.
    const key = { tenant: 'acme', conversationId: 'c1' }
    const acquired = await store.acquire(key, { holderId: 'h', leaseMs: 1000 })
    await store.setSandbox(key, acquired.lease, {
      sandboxId: foreign.id,
      expectedSandboxId: null,
      providerId: 'mock',
    })
    await store.release(key, acquired.lease, { turnEndedAt: Date.now() })
    provider.clearCalls()
    await expect(sessions.beginTurn('c1', { tenant: 'acme' })).rejects.toMatchObject({
      code: 'TENANT_MISMATCH',
      sandboxId: foreign.id,
    })
    expect(provider.callsOf('connect')).toHaveLength(0)
    expect(provider.callsOf('pause')).toHaveLength(0)
    expect(provider.sandboxes.get(foreign.id)?.state).toBe('running')
  })

  it('overlapping turns share one sandbox: one creation, one pause after the last', async () => {
    const { provider, sessions, id } = setup()
    const turns = await Promise.all(Array.from({ length: 8 }, () => sessions.beginTurn(id)))
    expect(provider.callsOf('create')).toHaveLength(1)
    expect(new Set(turns.map((t) => t.report?.sandboxId)).size).toBe(1)
    const reports = []
    for (const turn of turns) reports.push(await turn.end())
    expect(reports.filter((r) => r.last)).toHaveLength(1)
    expect(reports.at(-1)?.action).toBe('paused')
    expect(reports.slice(0, -1).every((r) => r.action === 'left-running-for-other-holders')).toBe(true)
    expect(provider.callsOf('pause')).toHaveLength(1)
  })

  it('counts the running and paused time of overlapping turns once', async () => {
    const { sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    const before = await sessions.getSession(id)
    const pausedFrom = Date.now()
    await sleep(150)
    // A and B both resume from the same pause; A ends first and leaves the sandbox running for B.
    const windowStart = Date.now()
    const a = await sessions.beginTurn(id)
    const b = await sessions.beginTurn(id)
    // The pause ended before this point, whichever turn's resume ended it.
    const pauseWindow = (Date.now() - pausedFrom) / 1000
    await sleep(150)
    expect((await a.end()).last).toBe(false)
    await sleep(150)
    expect((await b.end()).last).toBe(true)
    const window = (Date.now() - windowStart) / 1000
    const after = await sessions.getSession(id)
    const running = after!.runningSeconds - before!.runningSeconds
    const paused = after!.pausedSeconds - before!.pausedSeconds
    // Counted per turn, running would be about 0.45 s (more than the window) and the pause counted twice.
    expect(running).toBeGreaterThanOrEqual(0.29)
    expect(running).toBeLessThanOrEqual(window + 0.001)
    expect(paused).toBeGreaterThanOrEqual(0.14)
    expect(paused).toBeLessThanOrEqual(pauseWindow + 0.001)
  })

  it('a creator that died mid-creation is replaced once its lease lapses (single-flight, bounded wait)', async () => {
    const { provider, store, sessions, id } = setup()
    const key = { tenant: 'default', conversationId: id }
    const dead = await store.acquire(key, { holderId: 'dead-creator', leaseMs: 400 })
    expect(dead.create).toBe(true)
    const turn = await sessions.beginTurn(id)
    expect(turn.report?.outcome).toBe('created')
    expect(provider.callsOf('create')).toHaveLength(1)
    expect((await turn.end()).last).toBe(true)
  })

  it('gives up waiting for another creator after createWaitMs with SESSION_BUSY', async () => {
    const { provider, store, sessions, id } = setup({ createWaitMs: 200 })
    const key = { tenant: 'default', conversationId: id }
    await store.acquire(key, { holderId: 'slow-creator', leaseMs: 60_000 })
    await expect(sessions.beginTurn(id)).rejects.toMatchObject({ code: 'SESSION_BUSY', retryable: true })
    expect(provider.calls).toHaveLength(0)
  })

  it('the last holder pauses even when it never touched the sandbox', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    const lazy = await sessions.beginTurn(id, { lazy: true })
    const eager = await sessions.beginTurn(id)
    expect((await eager.end()).action).toBe('left-running-for-other-holders')
    const end = await lazy.end()
    expect(end).toMatchObject({ last: true, action: 'paused' })
    expect(provider.callsOf('pause')).toHaveLength(2)
    expect([...provider.sandboxes.values()][0]?.state).toBe('paused')
  })
})

describe('createSessionManager: health and rehydration', () => {
  it('detects lost memory, replays the journal before the body and marks it repaired', async () => {
    const { provider, sessions, id } = setup({}, { pauseKeeps: { memory: false, processes: false } })
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.runCode('model = 5')
      await turn.journal.record({ kind: 'code', code: 'model = 5' })
    })
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.outcome).toBe('resumed')
      expect(turn.report?.survived.memory).toBe(false)
      expect(turn.report?.survived.filesystem).toBe(true)
      expect(turn.report?.stateLost).toBe(true)
      expect(turn.report?.rehydratedSteps).toBe(1)
      expect(turn.report?.checks.find((c) => c.name === 'memory')?.status).toBe('repaired')
      expect((await turn.sandbox.runCode('model')).text).toBe('5')
    })
    // Rehydrated memory carries the sentinel again: the next resume (which loses memory again) detects it again.
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.survived.memory).toBe(false)
      expect(turn.report?.rehydratedSteps).toBe(1)
    })
    expect(provider.callsOf('create')).toHaveLength(1)
  })

  it('a steady turn end writes nothing in the sandbox; what the resume verified carries over', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.runCode('a = 1')
    })
    const turn = await sessions.beginTurn(id)
    expect(turn.report?.survived).toMatchObject({ memory: true, filesystem: true })
    provider.clearCalls()
    await turn.end()
    // Sentinel and marker were verified at resume, and no process was recorded nor started since.
    expect(provider.calls.map((c) => c.operation)).toEqual(['pause'])
    await sessions.withTurn(id, async (next) => {
      expect(next.report?.survived).toMatchObject({ memory: true, filesystem: true })
      // The marker really is checked: delete it and the next resume says files were lost.
      await next.sandbox.remove('/home/user/.sandkeep')
    })
    await sessions.withTurn(id, async (next) => {
      expect(next.report?.survived.filesystem).toBe(false)
      expect(next.report?.stateLost).toBe(true)
    })
  })

  it('records the process list the resume read when the turn could not have changed it', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.startProcess('sleep 1000')
    })
    const recorded = (await sessions.getSession(id))?.manifest?.processes
    expect(recorded?.map((p) => p.command)).toEqual(['sleep 1000'])
    const turn = await sessions.beginTurn(id)
    expect(turn.report?.survived.processes).toBe(true)
    await turn.sandbox.runCode('b = 2')
    await turn.sandbox.writeFile('/home/user/notes.txt', 'n')
    provider.clearCalls()
    await turn.end()
    expect(provider.callsOf('listProcesses')).toHaveLength(0)
    expect((await sessions.getSession(id))?.manifest?.processes).toEqual(recorded)
    await sessions.withTurn(id, async (next) => {
      expect(next.report?.survived.processes).toBe(true)
    })
  })

  it('lists the processes again after a start, a kill, a command, a repair or a look at the SDK object', async () => {
    const server = 'python3 -m http.server 8124'
    const { provider, sessions, id } = setup({
      healthChecks: [processCheck({ name: 'web', command: server })],
    })
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.startProcess(server)
    })
    const commands = async () => (await sessions.getSession(id))?.manifest?.processes?.map((p) => p.command)
    const endCalls = async (body: (turn: Turn) => Promise<unknown>) => {
      const turn = await sessions.beginTurn(id)
      await body(turn)
      provider.clearCalls()
      await turn.end()
      return provider.callsOf('listProcesses').length
    }
    expect(await endCalls((turn) => turn.sandbox.startProcess('sleep 1000'))).toBe(1)
    expect(await commands()).toEqual([server, 'sleep 1000'])
    expect(
      await endCalls(async (turn) => {
        const sleeper = (await turn.sandbox.listProcesses()).find((p) => p.command === 'sleep 1000')
        await turn.sandbox.killProcess(sleeper!.pid)
      }),
    ).toBe(1)
    expect(await commands()).toEqual([server])
    expect(await endCalls((turn) => turn.sandbox.runCommand('echo hi'))).toBe(1)
    expect(await endCalls(async (turn) => turn.sandbox.native)).toBe(1)
    expect(await endCalls(async () => {})).toBe(0)
    // The server dies; the next resume's repair starts it again under a new pid, which the end records.
    const [sandbox] = provider.sandboxes.values()
    const before = (await sessions.getSession(id))?.manifest?.processes?.[0]?.pid
    sandbox!.processes.length = 0
    expect(
      await endCalls(async (turn) => {
        expect(turn.report?.checks.find((c) => c.name === 'web')?.status).toBe('repaired')
      }),
    ).toBe(1)
    const after = (await sessions.getSession(id))?.manifest?.processes
    expect(after?.map((p) => p.command)).toEqual([server])
    expect(after?.[0]?.pid).not.toBe(before)
  })

  it('a declared port probe does not count as a process change; a custom check may', async () => {
    const server = 'python3 -m http.server 8125'
    const custom = customCheck({ name: 'custom', run: async () => true })
    for (const [checks, lists] of [
      [[processCheck({ name: 'web', command: server }), portCheck({ name: 'port', port: 8125 })], 0],
      [[custom], 0],
      [[customCheck({ name: 'native', run: async ({ sandbox }) => sandbox.native !== undefined })], 1],
    ] as const) {
      const { provider, sessions, id } = setup({ healthChecks: [...checks] })
      await sessions.withTurn(id, async (turn) => {
        await turn.sandbox.startProcess(server)
      })
      const turn = await sessions.beginTurn(id)
      expect(
        turn.report?.checks.filter((c) => c.status !== 'skipped').every((c) => c.status === 'passed'),
      ).toBe(true)
      provider.clearCalls()
      await turn.end()
      expect(provider.callsOf('listProcesses')).toHaveLength(lists)
    }
  })

  it('works with a provider whose handles are frozen, and then lists again after any process call', async () => {
    const mock = createMockProvider()
    const freeze = (handle: SandboxHandle) =>
      Object.freeze(
        Object.fromEntries(
          Object.keys(handle).map((name) => [name, handle[name as keyof SandboxHandle]]),
        ) as unknown as SandboxHandle,
      )
    const provider: SandboxProvider = {
      ...mock,
      create: async (options) => freeze(await mock.create(options)),
      connect: async (id, options) => freeze(await mock.connect(id, options)),
    }
    const sessions = createSessionManager({ store: createMemorySessionStore(), provider })
    const id = `conv-${randomUUID()}`
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.startProcess('sleep 1000')
    })
    for (const [body, lists] of [
      [async (turn: Turn) => turn.sandbox.runCode('1 + 1'), 0],
      [async (turn: Turn) => turn.sandbox.startProcess('sleep 2000'), 1],
    ] as const) {
      const turn = await sessions.beginTurn(id)
      expect(turn.report?.survived.processes).toBe(true)
      await body(turn)
      mock.clearCalls()
      await turn.end()
      expect(mock.callsOf('listProcesses')).toHaveLength(lists)
    }
    const commands = (await sessions.getSession(id))?.manifest?.processes?.map((p) => p.command)
    expect(commands).toEqual(['sleep 1000', 'sleep 2000'])
  })

  it('keeps the manifest of an overlapping turn that ended meanwhile, with the processes it started', async () => {
    const { sessions, id } = setup()
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.startProcess('sleep 1000')
    })
    const a = await sessions.beginTurn(id)
    const b = await sessions.beginTurn(id)
    await b.sandbox.startProcess('sleep 2000')
    expect((await b.end()).last).toBe(false)
    // A changed nothing itself, but the list it read at its start no longer holds: B's stays.
    expect((await a.end()).last).toBe(true)
    const processes = (await sessions.getSession(id))?.manifest?.processes
    expect(processes?.map((p) => p.command).sort()).toEqual(['sleep 1000', 'sleep 2000'])
  })

  it('with rehydrate none, reports the loss without replaying', async () => {
    const { sessions, id } = setup({ rehydrate: 'none' }, { pauseKeeps: { memory: false } })
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.runCode('y = 1')
      await turn.journal.record({ kind: 'code', code: 'y = 1' })
    })
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.stateLost).toBe(true)
      expect(turn.report?.rehydratedSteps).toBe(0)
      expect((await turn.sandbox.runCode('y')).error?.name).toBe('NameError')
    })
  })

  it('runs bootstrap on every fresh sandbox', async () => {
    const { provider, sessions, id } = setup({
      bootstrap: [{ kind: 'file', path: '/home/user/boot', content: 'b' }],
    })
    let first = ''
    await sessions.withTurn(id, async (turn) => {
      first = (await turn.ready()).id
      expect(await turn.sandbox.readFile('/home/user/boot')).toBe('b')
    })
    provider.expire(first)
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.outcome).toBe('recreated')
      expect(await turn.sandbox.readFile('/home/user/boot')).toBe('b')
    })
  })

  it('repairs a stopped server with processCheck and reports processes lost', async () => {
    const server = 'python3 -m http.server 8123'
    const { provider, sessions, id } = setup(
      {
        healthChecks: [
          processCheck({ name: 'web', command: server }),
          portCheck({ name: 'web-port', port: 8123, path: '/' }),
        ],
      },
      { pauseKeeps: { processes: false } },
    )
    await sessions.withTurn(id, async (turn) => {
      // A brand-new sandbox has nothing to check; the turn starts its server itself.
      expect(turn.report?.checks.map((c) => [c.name, c.status])).toEqual([
        ['web', 'skipped'],
        ['web-port', 'skipped'],
      ])
      await turn.sandbox.startProcess(server)
    })
    await sessions.withTurn(id, async (turn) => {
      const checks = Object.fromEntries(turn.report?.checks.map((c) => [c.name, c.status]) ?? [])
      expect(turn.report?.survived.processes).toBe(false)
      expect(checks).toMatchObject({ processes: 'failed', web: 'repaired', 'web-port': 'passed' })
      expect((await turn.sandbox.listProcesses()).map((p) => p.command)).toEqual([server])
    })
    await sessions.withTurn(id, async (turn) => {
      const checks = Object.fromEntries(turn.report?.checks.map((c) => [c.name, c.status]) ?? [])
      expect(checks).toMatchObject({ web: 'repaired', 'web-port': 'passed' })
    })
    expect(provider.callsOf('startProcess')).toHaveLength(3)
  })

  it('fails the turn only for a required check that stays broken, and still pauses', async () => {
    const { provider, sessions, id } = setup({
      healthChecks: [
        fileCheck({ name: 'optional-file', path: '/nope' }),
        codeCheck({
          name: 'db',
          code: 'connected',
          required: true,
          repair: { code: 'other = 1' },
          timeoutMs: 500,
        }),
      ],
    })
    await sessions.withTurn(id, async () => {})
    const error = await sessions.beginTurn(id).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'HEALTH_CHECK_FAILED' })
    expect((error as Error).message).toContain("'db'")
    expect((error as Error).message).not.toContain('optional-file')
    expect(provider.callsOf('pause')).toHaveLength(2)
  })

  it('bounds a hanging probe by its timeout', async () => {
    const { sessions, id } = setup({
      healthChecks: [customCheck({ name: 'hang', run: () => new Promise(() => {}), timeoutMs: 100 })],
    })
    await sessions.withTurn(id, async () => {})
    await sessions.withTurn(id, async (turn) => {
      const hang = turn.report?.checks.find((c) => c.name === 'hang')
      expect(hang).toMatchObject({ status: 'failed', message: expect.stringContaining('timed out') })
    })
  })

  it('repairs through a code repair', async () => {
    const { sessions, id } = setup({
      healthChecks: [
        codeCheck({ name: 'conn', code: "globals().get('conn')", repair: { code: 'conn = 1' } }),
      ],
    })
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.checks[0]?.status).toBe('skipped')
    })
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.checks.find((c) => c.name === 'conn')?.status).toBe('repaired')
    })
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.checks.find((c) => c.name === 'conn')?.status).toBe('passed')
    })
  })

  it('refuses a bad journal step without storing it', async () => {
    const { sessions, id } = setup()
    await sessions.withTurn(id, async (turn) => {
      await expect(turn.journal.record({ kind: 'shell', command: 'x' } as never)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      })
      await expect(turn.journal.record({ kind: 'command', command: '' })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      })
      expect(await turn.journal.list()).toEqual([])
    })
  })
})

describe('createSessionManager: speculative connect', () => {
  /** Counts the connect calls already made each time the store's acquire is called. */
  function watchAcquire(store: SessionStore, provider: MockProvider): number[] {
    const seen: number[] = []
    const acquire = store.acquire.bind(store)
    store.acquire = (key, options) => {
      seen.push(provider.callsOf('connect').length)
      return acquire(key, options)
    }
    return seen
  }

  it('connects while it takes the lease to the sandbox its last turn used, and connects once', async () => {
    const { provider, store, sessions, id } = setup()
    // The sandbox this process created carries its tenant: no getInfo needed before trusting it.
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.runCode('x = 7')
    })
    expect(provider.callsOf('getInfo')).toHaveLength(0)
    const seen = watchAcquire(store, provider)
    const before = provider.callsOf('connect').length
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.outcome).toBe('resumed')
      expect((await turn.sandbox.runCode('x')).text).toBe('7')
    })
    expect(seen).toEqual([before + 1])
    expect(provider.callsOf('connect')).toHaveLength(before + 1)
    expect([...provider.sandboxes.values()][0]?.state).toBe('paused')
  })

  it('connects again, after the lease, when a turn of another process ended in between', async () => {
    const { provider, store, sessions, id } = setup()
    const other = createSessionManager({ store, provider, retry: { retries: 0 } })
    await sessions.withTurn(id, async () => {})
    await sessions.withTurn(id, async () => {})
    await other.withTurn(id, async () => {})
    const before = provider.callsOf('connect').length
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.outcome).toBe('resumed')
      expect((await turn.sandbox.runCode('1 + 1')).text).toBe('2')
    })
    // The speculative connect was not trusted: the turn count it expected had moved on.
    expect(provider.callsOf('connect')).toHaveLength(before + 2)
    expect([...provider.sandboxes.values()][0]?.state).toBe('paused')
    expect((await sessions.getSession(id))?.turnCount).toBe(4)
  })

  it('is not trusted while another turn holds the session', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {})
    await sessions.withTurn(id, async () => {})
    const first = await sessions.beginTurn(id)
    const before = provider.callsOf('connect').length
    const second = await sessions.beginTurn(id)
    expect(provider.callsOf('connect')).toHaveLength(before + 2)
    expect(second.report?.outcome).toBe('reconnected')
    expect((await second.end()).action).toBe('left-running-for-other-holders')
    expect((await first.end()).action).toBe('paused')
  })

  it('is never made for lazy turns, with speculativeConnect false, or after the sandbox was killed', async () => {
    const lazy = setup()
    await lazy.sessions.withTurn(lazy.id, async () => {})
    await lazy.sessions.withTurn(lazy.id, async () => {})
    const connects = lazy.provider.callsOf('connect').length
    await lazy.sessions.withTurn(lazy.id, async () => {}, { lazy: true })
    expect(lazy.provider.callsOf('connect')).toHaveLength(connects)

    const off = setup({ speculativeConnect: false })
    await off.sessions.withTurn(off.id, async () => {})
    await off.sessions.withTurn(off.id, async () => {})
    const seen = watchAcquire(off.store, off.provider)
    const before = off.provider.callsOf('connect').length
    await off.sessions.withTurn(off.id, async () => {})
    expect(seen).toEqual([before])
    expect(() => createSessionManager({ ...setupOptions(off), speculativeConnect: 'yes' as never })).toThrow(
      /speculativeConnect/,
    )

    const killed = setup({ onTurnEnd: 'kill' })
    await killed.sessions.withTurn(killed.id, async () => {})
    await killed.sessions.withTurn(killed.id, async () => {})
    expect(killed.provider.callsOf('connect')).toHaveLength(0)
  })
})

function setupOptions(made: ReturnType<typeof setup>): SessionManagerOptions {
  return { store: made.store, provider: made.provider }
}

describe('createSessionManager: turn end modes', () => {
  it('auto-pause sets the idle timeout with pause-on-timeout at creation and makes no pause call', async () => {
    const { provider, sessions, id } = setup({ onTurnEnd: 'auto-pause', idleTimeoutMs: 5000 })
    const end = await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.runCommand('true')
      return turn
    })
    expect(end.endReport?.action).toBe('auto-pause')
    const [sandbox] = provider.sandboxes.values()
    expect(sandbox?.createOptions.lifecycle).toEqual({ onTimeout: 'pause', autoResume: true })
    expect(provider.callsOf('setTimeout').map((c) => c.detail)).toEqual(['5000'])
    expect(provider.callsOf('pause')).toHaveLength(0)
  })

  it('keep leaves it running; kill kills it and the next turn recreates', async () => {
    const kept = setup({ onTurnEnd: 'keep' })
    await kept.sessions.withTurn(kept.id, async () => {})
    expect([...kept.provider.sandboxes.values()][0]?.state).toBe('running')
    await kept.sessions.withTurn(kept.id, async (turn) => expect(turn.report?.outcome).toBe('reconnected'))

    const killed = setup({ onTurnEnd: 'kill' })
    await killed.sessions.withTurn(killed.id, async () => {})
    expect(killed.provider.sandboxes.size).toBe(0)
    await killed.sessions.withTurn(killed.id, async (turn) => expect(turn.report?.outcome).toBe('recreated'))
    expect(killed.provider.callsOf('connect')).toHaveLength(0)
  })

  it('a failed pause is reported on the end report and the record says unknown', async () => {
    const { provider, sessions, id } = setup({ retry: { retries: 0 } })
    const errors = record(sessions, 'error')
    const turn = await sessions.beginTurn(id)
    provider.failNext('pause', 'SANDBOX_UNAVAILABLE')
    const end = await turn.end()
    expect(end.action).toBe('none')
    expect(end.error?.code).toBe('SANDBOX_UNAVAILABLE')
    expect(errors.some((e) => e.phase === 'pause')).toBe(true)
    expect((await sessions.getSession(id))?.state).toBe('unknown')
  })

  it('when the store is down at turn end, the end reports it and does not pause (others may hold it)', async () => {
    const { provider, store, sessions, id } = setup()
    const errors = record(sessions, 'error')
    const turn = await sessions.beginTurn(id)
    store.release = async () => {
      throw new SandkeepError({ code: 'STORE_UNAVAILABLE', message: 'down', retryable: true })
    }
    const [end, again] = await Promise.all([turn.end(), turn.end()])
    expect(end).toBe(again)
    expect(end).toMatchObject({ action: 'none', last: false, error: { code: 'STORE_UNAVAILABLE' } })
    expect(provider.callsOf('pause')).toHaveLength(0)
    expect(errors.map((e) => e.phase)).toContain('release')
  })

  it('renews the lease while a long turn runs', async () => {
    const provider = createMockProvider()
    const store = createMemorySessionStore()
    let renewals = 0
    const renew = store.renew.bind(store)
    store.renew = async (...args) => {
      renewals++
      return renew(...args)
    }
    const sessions = createSessionManager({ store, provider, leaseMs: 300 })
    await sessions.withTurn('long', async () => {
      await new Promise((resolve) => setTimeout(resolve, 900))
    })
    expect(renewals).toBeGreaterThanOrEqual(2)
    expect(provider.callsOf('pause')).toHaveLength(1)
  })

  it('leaves no listener behind on a long-lived caller signal', async () => {
    const { sessions, id } = setup()
    const controller = new AbortController()
    for (let i = 0; i < 5; i++) {
      await sessions.withTurn(id, async (turn) => turn.sandbox.runCommand('true'), {
        abortSignal: controller.signal,
      })
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('an abort during a slow resume rejects with ABORTED and releases the lease', async () => {
    const provider = createMockProvider({ latencyMs: 200 })
    const store = createMemorySessionStore()
    const sessions = createSessionManager({ store, provider })
    await sessions.withTurn('slow', async () => {})
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 50)
    await expect(sessions.beginTurn('slow', { abortSignal: controller.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    })
    // A connect that was under way may have resumed it: the aborted turn, the last holder, paused it again.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect([...provider.sandboxes.values()][0]?.state).toBe('paused')
    // The lease went with it: the next turn is the only holder and pauses at its end.
    const next = await sessions.beginTurn('slow')
    expect((await next.end()).last).toBe(true)
  })

  it('an aborted signal stops the turn before any provider call', async () => {
    const { provider, sessions, id } = setup()
    const controller = new AbortController()
    controller.abort()
    await expect(sessions.beginTurn(id, { abortSignal: controller.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    })
    expect(provider.calls).toHaveLength(0)
  })
})

describe('createSessionManager: sessions', () => {
  it('endSession kills and deletes; getSession/listSessions read the store', async () => {
    const { provider, sessions, id } = setup()
    await sessions.withTurn(id, async () => {}, { tenant: 't1' })
    expect((await sessions.listSessions({ tenant: 't1' })).sessions.map((s) => s.conversationId)).toEqual([
      id,
    ])
    expect(await sessions.endSession(id, { tenant: 't1' })).toBe(true)
    expect(provider.sandboxes.size).toBe(0)
    expect(await sessions.getSession(id, { tenant: 't1' })).toBeNull()
    expect(await sessions.endSession(id, { tenant: 't1' })).toBe(false)
  })

  it('gc kills unmapped sandkeep sandboxes and deletes sessions whose sandbox is gone', async () => {
    const { provider, sessions, id } = setup({ createWaitMs: 0, leaseMs: 300 })
    await sessions.withTurn(id, async () => {}, { tenant: 'gc' })
    await sessions.withTurn(`${id}-2`, async () => {}, { tenant: 'gc' })
    const orphan = await provider.create({ metadata: { 'sandkeep.tenant': 'gc' } })
    const stranger = await provider.create({ metadata: { owner: 'someone else' } })
    const gone = (await sessions.getSession(`${id}-2`, { tenant: 'gc' }))?.sandboxId ?? ''
    provider.expire(gone)
    orphan.native.startedAt = new Date(Date.now() - 60_000)
    const dry = await sessions.gc({ tenant: 'gc', dryRun: true })
    expect(dry.killedSandboxes).toEqual([orphan.id])
    expect(provider.sandboxes.has(orphan.id)).toBe(true)
    const result = await sessions.gc({ tenant: 'gc' })
    expect(result.killedSandboxes).toEqual([orphan.id])
    expect(result.deletedSessions).toEqual([{ tenant: 'gc', conversationId: `${id}-2` }])
    expect(provider.sandboxes.has(orphan.id)).toBe(false)
    expect(provider.sandboxes.has(stranger.id)).toBe(true)
    expect(await sessions.getSession(id, { tenant: 'gc' })).not.toBeNull()
  })
})
