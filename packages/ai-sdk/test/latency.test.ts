import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { stepCountIs } from 'ai'
import { describe, expect, it } from 'vitest'
import { type ScriptStep, scriptedModel } from '../src/mock-model.test-support.js'
import { sandkeepTurn } from '../src/turn/index.js'
import { useRedisSessions } from './helpers.js'

const rig = useRedisSessions('latency')
const { tenant, newConversation } = rig

const events = (type: string, sandboxId: string) => rig.host.events.list({ type, sandboxId })

/** Polls `condition` every 20 ms, at most `timeoutMs`; false when it never held. */
async function eventually(condition: () => boolean, timeoutMs = 15_000): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
    if (condition()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return condition()
}

/** Turn 1 of a conversation: sets a variable through the runCode tool; returns the sandbox id. */
async function seed(conversationId: string, manager = rig.sessions): Promise<string> {
  const { model } = scriptedModel([
    { toolCalls: [{ toolName: 'runCode', input: { code: 'x = 41' } }] },
    { text: 'set' },
  ])
  const turn = sandkeepTurn({ sessions: manager, conversationId, tenant })
  await turn.generateText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
  expect((await turn.ended)?.action).toBe('paused')
  return turn.report!.sandboxId
}

describe('the reply does not wait for the pause', () => {
  it('the stream closes before the pause is done; turn.ended resolves after it', async () => {
    const conversationId = newConversation()
    const sandboxId = await seed(conversationId)
    const pausesBefore = events('sandbox-pause', sandboxId).length
    rig.host.faults.addLatency('pause', 3_000, { sandboxId, count: 1 })
    const { model } = scriptedModel([
      { toolCalls: [{ toolName: 'runCode', input: { code: 'x + 1' } }] },
      { text: 'x + 1 is 42' },
    ])
    const turn = sandkeepTurn({ sessions: rig.sessions, conversationId, tenant })
    const result = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
    let text = ''
    for await (const delta of result.textStream) text += delta
    // The pause is being held back 3 s by the host: a stream that waited for it would close after it.
    expect(text).toBe('x + 1 is 42')
    expect(events('sandbox-pause', sandboxId)).toHaveLength(pausesBefore)
    expect(rig.host.getSandbox(sandboxId)?.state).toBe('running')
    const end = await turn.ended
    expect(end?.action).toBe('paused')
    expect(events('sandbox-pause', sandboxId)).toHaveLength(pausesBefore + 1)
    expect(rig.host.getSandbox(sandboxId)?.state).toBe('paused')
  }, 120_000)

  it('a turn begun by another manager meanwhile waits for the pause, then resumes the paused sandbox', async () => {
    const conversationId = newConversation()
    const sandboxId = await seed(conversationId)
    const otherStore = createRedisSessionStore({ prefix: rig.prefix })
    const other = createSessionManager({
      store: otherStore,
      provider: createE2BProvider({
        apiKey: rig.host.apiKey,
        apiUrl: rig.host.apiUrl,
        sandboxUrl: rig.host.sandboxUrl,
      }),
      onTurnEnd: 'pause',
    })
    try {
      rig.host.faults.addLatency('pause', 2_000, { sandboxId, count: 1 })
      const { model } = scriptedModel([
        { toolCalls: [{ toolName: 'runCode', input: { code: 'x = x + 1' } }] },
        { text: 'incremented' },
      ])
      const turn = sandkeepTurn({ sessions: rig.sessions, conversationId, tenant })
      await turn.generateText({ model, prompt: 'go', stopWhen: stepCountIs(3) })
      // The first turn's pause is still held back: the next message arrives from another process now.
      expect(rig.host.getSandbox(sandboxId)?.state).toBe('running')
      const next = await other.withTurn(
        conversationId,
        async (t) => ({ value: (await t.sandbox.runCode('x')).text, report: t.report }),
        { tenant },
      )
      expect(next.value).toBe('42')
      // It found the sandbox paused (not still running, which would mean it went in during the pause) and
      // its memory kept.
      expect(next.report).toMatchObject({ outcome: 'resumed', sandboxId, stateLost: false })
      expect(next.report?.survived.memory).toBe(true)
      expect((await turn.ended)?.action).toBe('paused')
      const order = rig.host.events
        .list({ sandboxId })
        .filter((e) => e.type === 'sandbox-pause' || e.type === 'sandbox-resume')
        .map((e) => e.type)
      expect(order.slice(-3)).toEqual(['sandbox-pause', 'sandbox-resume', 'sandbox-pause'])
    } finally {
      await otherStore.close()
    }
  }, 120_000)
})

describe('resume: eager and auto', () => {
  /** A model whose first step waits (bounded) for `before()` and records whether it held. */
  function waitingModel(steps: ScriptStep[], before: () => boolean) {
    const scripted = scriptedModel(steps)
    const seen: boolean[] = []
    const generate = scripted.model.doGenerate.bind(scripted.model)
    scripted.model.doGenerate = async (options) => {
      if (seen.length === 0) seen.push(await eventually(before, 10_000))
      return generate(options)
    }
    return { model: scripted.model, seen }
  }

  it("resume: 'eager' resumes while the model thinks, and pauses a turn whose model uses no tool", async () => {
    const conversationId = newConversation()
    const sandboxId = await seed(conversationId)
    const resumes = events('sandbox-resume', sandboxId).length
    const pauses = events('sandbox-pause', sandboxId).length
    const { model, seen } = waitingModel(
      [{ text: 'nothing to run' }],
      () => events('sandbox-resume', sandboxId).length > resumes,
    )
    const turn = sandkeepTurn({ sessions: rig.sessions, conversationId, tenant, resume: 'eager' })
    const result = await turn.generateText({ model, prompt: 'hi' })
    expect(result.text).toBe('nothing to run')
    expect(seen).toEqual([true])
    const end = await turn.ended
    expect(end?.action).toBe('paused')
    expect(turn.report).toMatchObject({ outcome: 'resumed', sandboxId })
    expect(events('sandbox-pause', sandboxId)).toHaveLength(pauses + 1)
    expect(rig.host.getSandbox(sandboxId)?.state).toBe('paused')
  }, 120_000)

  it("resume: 'auto' is eager after a turn that used the sandbox, lazy after one that did not", async () => {
    const conversationId = newConversation()
    const sandboxId = await seed(conversationId)

    // Turn 2: the previous turn used the sandbox, so the resume starts before the model's tool call.
    let resumes = events('sandbox-resume', sandboxId).length
    const eager = waitingModel(
      [{ toolCalls: [{ toolName: 'runCode', input: { code: 'x + 1' } }] }, { text: '42' }],
      () => events('sandbox-resume', sandboxId).length > resumes,
    )
    const second = sandkeepTurn({ sessions: rig.sessions, conversationId, tenant, resume: 'auto' })
    await second.generateText({ model: eager.model, prompt: 'go', stopWhen: stepCountIs(3) })
    expect(eager.seen).toEqual([true])
    expect((await second.ended)?.action).toBe('paused')

    // Turn 3: also eager (turn 2 used the sandbox), but its model runs nothing.
    const idle = sandkeepTurn({ sessions: rig.sessions, conversationId, tenant, resume: 'auto' })
    await idle.generateText({ model: scriptedModel([{ text: 'just chatting' }]).model, prompt: 'hi' })
    expect((await idle.ended)?.action).toBe('paused')
    expect(idle.report?.outcome).toBe('resumed')

    // Turn 4: turn 3 did not use the sandbox, so nothing resumes before a tool call, and none comes.
    resumes = events('sandbox-resume', sandboxId).length
    const lazy = sandkeepTurn({ sessions: rig.sessions, conversationId, tenant, resume: 'auto' })
    await lazy.generateText({ model: scriptedModel([{ text: 'still chatting' }]).model, prompt: 'hi' })
    const end = await lazy.ended
    expect(end?.action ?? 'none').toBe('none')
    expect(lazy.report).toBeUndefined()
    expect(events('sandbox-resume', sandboxId)).toHaveLength(resumes)
    expect(rig.host.getSandbox(sandboxId)?.state).toBe('paused')
  }, 180_000)
})
