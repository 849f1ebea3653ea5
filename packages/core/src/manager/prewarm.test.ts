import { describe, expect, it } from 'vitest'
import { record, setup, setupOptions } from './manager.test-support.js'
import { createSessionManager } from './session-manager.js'

/** Lets pending promise callbacks and I/O callbacks run, `rounds` times. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve))
}

describe('prewarm: the resume starts with the turn', () => {
  it('prewarm: true resumes right after the lease, before any use, and beginTurn does not wait for it', async () => {
    const made = setup()
    const { sessions, provider, id } = made
    await sessions.withTurn(id, (turn) => turn.sandbox.runCode('x = 1'))
    provider.clearCalls()
    const starts = record(sessions, 'turn-start')
    const turn = await sessions.beginTurn(id, { prewarm: true })
    expect(starts.at(-1)).toMatchObject({ lazy: true, prewarm: true })
    await settle()
    expect(provider.callsOf('connect')).toHaveLength(1)
    expect(turn.report).toMatchObject({ outcome: 'resumed' })
    expect((await turn.sandbox.runCode('x')).text).toBe('1')
    expect(provider.callsOf('connect')).toHaveLength(1)
    expect((await turn.end()).action).toBe('paused')
  })

  it('a prewarmed turn that is never used is paused at its end, and its record says the sandbox went unused', async () => {
    const { sessions, provider, store, id } = setup()
    await sessions.withTurn(id, (turn) => turn.sandbox.runCode('x = 1'))
    expect((await sessions.getSession(id))?.lastTurnUsedSandbox).toBe(true)
    const turn = await sessions.beginTurn(id, { prewarm: true })
    await turn.ready()
    const end = await turn.end()
    expect(end.action).toBe('paused')
    expect(turn.report?.outcome).toBe('resumed')
    const sandboxId = turn.report!.sandboxId
    expect(provider.sandboxes.get(sandboxId)?.state).toBe('paused')
    expect((await store.get({ tenant: 'default', conversationId: id }))?.lastTurnUsedSandbox).toBe(false)
  })

  it("prewarm: 'auto' resumes early only when the previous turn used the sandbox", async () => {
    const { sessions, provider, id } = setup()
    // No record yet: nothing to prewarm.
    const first = await sessions.beginTurn(id, { prewarm: 'auto' })
    await settle()
    expect(provider.callsOf('create')).toHaveLength(0)
    await first.sandbox.runCode('x = 1')
    await first.end()

    provider.clearCalls()
    const used = await sessions.beginTurn(id, { prewarm: 'auto' })
    await settle()
    expect(provider.callsOf('connect')).toHaveLength(1)
    await used.end()

    // The turn before did not use the sandbox (it was only prewarmed): this one waits for a use.
    provider.clearCalls()
    const idle = await sessions.beginTurn(id, { prewarm: 'auto' })
    await settle()
    expect(provider.callsOf('connect')).toHaveLength(0)
    expect((await idle.sandbox.runCode('x')).text).toBe('1')
    expect(provider.callsOf('connect')).toHaveLength(1)
    await idle.end()
  })

  it('refuses a bad prewarm, and prewarm with lazy: false, before any I/O', async () => {
    const { sessions, provider, id } = setup()
    await expect(sessions.beginTurn(id, { prewarm: 'sometimes' as never })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(sessions.beginTurn(id, { prewarm: true, lazy: false })).rejects.toThrow(/lazy: false/)
    expect(provider.calls).toHaveLength(0)
  })
})

describe('a turn begun while the last one is pausing the sandbox', () => {
  /** Holds every pause of `provider` until the returned function is called; counts pauses begun. */
  function gatePauses(provider: ReturnType<typeof setup>['provider']) {
    const pause = provider.pause!.bind(provider)
    const gate = Promise.withResolvers<void>()
    const state = { begun: 0, done: 0 }
    provider.pause = async (sandboxId, options) => {
      state.begun++
      await gate.promise
      const result = await pause(sandboxId, options)
      state.done++
      return result
    }
    return { open: () => gate.resolve(), state }
  }

  it.each([
    ['in this process', false],
    ['in another manager on the same store', true],
  ])('waits %s for the pause to be done, then resumes the paused sandbox', async (_, otherManager) => {
    const made = setup()
    const { sessions, provider, id } = made
    const next = otherManager
      ? createSessionManager({ ...setupOptions(made), retry: { retries: 0 } })
      : sessions
    await sessions.withTurn(id, (turn) => turn.sandbox.runCode('x = 1'))
    const gate = gatePauses(provider)
    const first = await sessions.beginTurn(id)
    await first.sandbox.runCode('x = x + 1')
    const ending = first.end()
    for (let i = 0; i < 100 && gate.state.begun === 0; i++) await settle(1)
    expect(gate.state.begun).toBe(1)

    let begun = false
    const second = next.beginTurn(id).then((turn) => {
      begun = true
      return turn
    })
    await settle(50)
    // The pause is held up: the next turn has neither its lease nor a connect.
    expect(begun).toBe(false)
    expect(provider.callsOf('connect').filter((c) => c.sandboxId === first.report!.sandboxId)).toHaveLength(1)
    gate.open()
    expect((await ending).action).toBe('paused')
    const turn = await second
    expect(gate.state.done).toBe(1)
    expect(turn.report).toMatchObject({ outcome: 'resumed', sandboxId: first.report!.sandboxId })
    expect((await turn.sandbox.runCode('x')).text).toBe('2')
    expect((await turn.end()).action).toBe('paused')
  })

  it('a turn begun before the last one released shares the sandbox instead of waiting', async () => {
    const { sessions, provider, id } = setup()
    await sessions.withTurn(id, (turn) => turn.sandbox.runCode('x = 1'))
    const first = await sessions.beginTurn(id)
    const second = await sessions.beginTurn(id)
    expect((await first.end()).action).toBe('left-running-for-other-holders')
    expect((await second.sandbox.runCode('x')).text).toBe('1')
    expect((await second.end()).action).toBe('paused')
    expect(provider.callsOf('pause')).toHaveLength(2)
  })
})
