import { randomUUID } from 'node:crypto'
import { createMockProvider } from '@sandkeep/testing'
import { describe, expect, it } from 'vitest'
import { codeCheck, customCheck, fileCheck, portCheck, processCheck } from '../contract/health.js'
import type { SandboxHandle, SandboxProvider } from '../contract/sandbox-provider.js'
import type { Turn } from '../contract/session-manager-types.js'
import { createMemorySessionStore } from '../store/memory-store.js'
import { setup } from './manager.test-support.js'
import { createSessionManager } from './session-manager.js'

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

  it('probes a declared check alongside the built-in probes, and again after a replay when memory was lost', async () => {
    const { provider, sessions, id } = setup(
      { healthChecks: [codeCheck({ name: 'model', code: 'model' })] },
      {},
    )
    await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.runCode('model = 5')
      await turn.journal.record({ kind: 'code', code: 'model = 5' })
    })
    const probesOf = () => provider.callsOf('runCode').filter((c) => c.detail === 'model')
    provider.clearCalls()
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.stateLost).toBe(false)
      expect(turn.report?.checks.find((c) => c.name === 'model')?.status).toBe('passed')
    })
    // Nothing lost: the early probe's answer is the check's.
    expect(probesOf()).toHaveLength(1)
    provider.dropMemory((await sessions.getSession(id))!.sandboxId!)
    provider.clearCalls()
    await sessions.withTurn(id, async (turn) => {
      expect(turn.report?.survived.memory).toBe(false)
      expect(turn.report?.rehydratedSteps).toBe(1)
      // Probed early (memory gone: false), then again after the replay, which put `model` back.
      expect(turn.report?.checks.find((c) => c.name === 'model')?.status).toBe('passed')
    })
    expect(probesOf()).toHaveLength(2)
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
      // The marker really is checked: delete it and the next resume finds it gone. The interpreter kept its
      // memory, so the sandbox did not restart: the files were kept, and the marker is written again.
      await next.sandbox.remove('/home/user/.sandkeep')
    })
    await sessions.withTurn(id, async (next) => {
      expect(next.report?.survived.filesystem).toBe(true)
      expect(next.report?.stateLost).toBe(false)
      expect(next.report?.checks.find((c) => c.name === 'filesystem')).toMatchObject({
        status: 'repaired',
        message: expect.stringContaining('the interpreter kept its memory'),
      })
      expect(await next.sandbox.exists('/home/user/.sandkeep/marker')).toBe(true)
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
