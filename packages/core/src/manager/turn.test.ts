import { describe, expect, it } from 'vitest'
import { hashConversationId } from '../contract/sandbox-metadata.js'
import { record, setup } from './manager.test-support.js'

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

  it("gives the resumed sandbox's port endpoint, also after the turn, and none where the provider routes none", async () => {
    const { sessions, id } = setup()
    const turn = await sessions.beginTurn(id, { lazy: true })
    expect(() => turn.sandbox.portEndpoint?.(8000)).toThrow(/ready/)
    const ready = await turn.ready()
    const endpoint = ready.portEndpoint?.(8000)
    expect(endpoint?.url).toBe(`http://8000-${ready.id}.mock.invalid`)
    await turn.end()
    // An address sends nothing: a preview URL handed out in a turn still names the (paused) sandbox after it.
    expect(turn.sandbox.portEndpoint?.(8000)).toEqual(endpoint)
    const bare = setup({}, { without: ['portEndpoint'] })
    await bare.sessions.withTurn(bare.id, async (other) => {
      expect((await other.ready()).portEndpoint).toBeUndefined()
    })
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

  it('reports a throwing listener as an error event (phase listener:<event>) and the turn goes on', async () => {
    const { sessions, id } = setup()
    const errors = record(sessions, 'error')
    const broken = new Error('listener bug')
    sessions.on('turn-end', () => {
      throw broken
    })
    const end = await sessions.withTurn(id, async (turn) => {
      await turn.sandbox.runCode('1')
      return 'done'
    })
    expect(end).toBe('done')
    expect(errors.map((e) => [e.phase, e.error])).toEqual([['listener:turn-end', broken]])
  })
})
