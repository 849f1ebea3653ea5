import { randomUUID } from 'node:crypto'
import { branchFromMessages, sandkeepMetadataOf } from '@sandkeep/agent'
import {
  createMemorySessionStore,
  createSessionManager,
  SandkeepError,
  type SessionManager,
  type SessionStore,
} from '@sandkeep/core'
import { createMockProvider, type MockProvider } from '@sandkeep/testing'
import { readUIMessageStream, stepCountIs, type UIMessage } from 'ai'
import { beforeEach, describe, expect, it } from 'vitest'
import { type ScriptStep, scriptedModel, toolResultsIn } from '../mock-model.test-support.js'
import { sandkeepTurn } from './index.js'

let provider: MockProvider
let store: SessionStore
let sessions: SessionManager
let conversationId: string

beforeEach(() => {
  provider = createMockProvider()
  store = createMemorySessionStore()
  sessions = createSessionManager({
    store,
    provider,
    checkpoints: { every: 'turn', keep: 10 },
    retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 5 },
  })
  conversationId = `conv-${randomUUID()}`
})

/** One model step that sets `x` and writes `file`, both recorded as setup (so a journal replay has them). */
function writeStep(x: number, file: string): ScriptStep {
  return {
    toolCalls: [
      { toolName: 'runCode', input: { code: `x = ${x}`, setup: true } },
      { toolName: 'writeFile', input: { path: file, content: `x was ${x}\n`, setup: true } },
    ],
  }
}

/** What the model sees of the sandbox: `x`, and whether each file exists. */
function lookStep(files: string[]): ScriptStep {
  return {
    toolCalls: [
      { toolName: 'runCode', input: { code: 'x' } },
      // The mock provider's shell knows `cat`: exit code 0 with the content, 1 for a missing file.
      ...files.map((path) => ({ toolName: 'runCommand', input: { command: `cat /home/user/${path}` } })),
    ],
  }
}

/** One generateText turn of the conversation with the scripted steps; returns what it saw and reported. */
async function turnWith(steps: ScriptStep[], extra: Record<string, unknown> = {}) {
  const { model, prompts } = scriptedModel(steps)
  const turn = sandkeepTurn({ sessions, conversationId, ...extra })
  const result = await turn.generateText({ model, prompt: 'go', stopWhen: stepCountIs(steps.length + 1) })
  const end = await turn.ended
  return { text: result.text, prompts, report: turn.report, end, checkpoint: turn.checkpoint, turn }
}

/** The conversation's state, to compare before and after a call that must change nothing. */
async function snapshotOfSession() {
  const key = { tenant: 'default', conversationId }
  return {
    record: await store.get(key),
    journal: await store.readJournal(key),
    checkpoints: await store.readCheckpoints!(key),
  }
}

/** Two turns: turn 1 sets x = 1 and writes one.txt, turn 2 sets x = 2 and writes two.txt. */
async function twoTurns() {
  await turnWith([writeStep(1, 'one.txt'), { text: 'one' }])
  await turnWith([writeStep(2, 'two.txt'), { text: 'two' }])
}

describe('sandkeepTurn branch', () => {
  it('regenerate: the new answer starts from the state before the last turn (its variable and file gone)', async () => {
    await twoTurns()
    const again = await turnWith([lookStep(['one.txt', 'two.txt']), { text: 'again' }], {
      branch: { regenerate: true },
    })
    const seen = toolResultsIn(again.prompts[1]).map((r) => r.output)
    // The first tool result carries the notice; then x as turn 1 left it, one.txt there, two.txt gone.
    expect(seen[0]).toMatchObject({
      notice: expect.stringMatching(/rewound.*end of turn 1/),
      result: '1',
    })
    expect(seen[1]).toMatchObject({ exitCode: 0, stdout: 'x was 1\n' })
    expect(seen[2]).toMatchObject({ exitCode: 1 })
    expect(again.report).toMatchObject({
      outcome: 'rewound',
      restored: { kind: 'rewound', turn: 1, source: 'snapshot' },
    })
    // The regenerated answer is turn 2 again; the replaced answer's checkpoint stays on its branch.
    expect(again.checkpoint?.turn).toBe(2)
    expect((await sessions.listCheckpoints(conversationId)).checkpoints.map((c) => c.turn)).toEqual([2, 2, 1])
  })

  it('editTurn k: starts from the state before turn k', async () => {
    await twoTurns()
    await turnWith([writeStep(3, 'three.txt'), { text: 'three' }])
    const edited = await turnWith([lookStep(['one.txt', 'two.txt', 'three.txt']), { text: 'edited' }], {
      branch: { editTurn: 2 },
    })
    const seen = toolResultsIn(edited.prompts[1]).map((r) => r.output)
    expect(seen[0]).toMatchObject({ result: '1' })
    expect(seen.slice(1).map((r) => (r as { exitCode: number }).exitCode)).toEqual([0, 1, 1])
    expect(edited.report?.restored).toMatchObject({ kind: 'rewound', turn: 1 })
    expect(edited.checkpoint?.turn).toBe(2)
  })

  it('editTurn 1 starts over from an empty sandbox', async () => {
    await twoTurns()
    const edited = await turnWith([lookStep(['one.txt']), { text: 'fresh' }], { branch: { editTurn: 1 } })
    const seen = toolResultsIn(edited.prompts[1]).map((r) => r.output)
    expect(seen[0]).toMatchObject({ notice: expect.stringMatching(/start of the conversation/) })
    expect(JSON.stringify(seen[0])).toMatch(/not defined/)
    expect(seen[1]).toMatchObject({ exitCode: 1 })
    expect(edited.checkpoint?.turn).toBe(1)
  })

  it('fromTurn: the current turn rewinds nothing; an earlier one rewinds there', async () => {
    await twoTurns()
    const kills = provider.callsOf('kill').length
    const same = await turnWith([lookStep(['two.txt']), { text: 'same' }], { branch: { fromTurn: 2 } })
    expect(same.report?.outcome).toBe('resumed')
    expect(toolResultsIn(same.prompts[1]).map((r) => r.output)[0]).toEqual({
      result: '2',
      stdout: '',
      stderr: '',
    })
    expect(provider.callsOf('kill')).toHaveLength(kills)
    const back = await turnWith([lookStep(['two.txt']), { text: 'back' }], { branch: { fromTurn: 1 } })
    expect(back.report?.restored).toMatchObject({ kind: 'rewound', turn: 1 })
    expect(toolResultsIn(back.prompts[1]).map((r) => r.output)[0]).toMatchObject({ result: '1' })
  })

  it('streamText: the model waits for the rewind, which is done even when no tool is used', async () => {
    await twoTurns()
    const { model } = scriptedModel([{ text: 'just words' }])
    const turn = sandkeepTurn({ sessions, conversationId, resume: 'lazy', branch: { regenerate: true } })
    const result = turn.streamText({ model, prompt: 'again' })
    expect(await result.text).toBe('just words')
    expect(await sessions.getSession(conversationId)).toMatchObject({
      turnCount: 1,
      restore: { kind: 'rewound', turn: 1 },
    })
  })

  it('refuses a bad shape in sandkeepTurn itself, before any I/O', () => {
    const bad: unknown[] = [
      { editTurn: 0 },
      { editTurn: -1 },
      { editTurn: 1.5 },
      { fromTurn: -1 },
      { regenerate: false },
      { regenerate: true, editTurn: 2 },
      { rewindTo: 1 },
      {},
      'regenerate',
    ]
    for (const branch of bad) {
      let error: unknown
      try {
        sandkeepTurn({ sessions, conversationId, branch: branch as never })
      } catch (caught) {
        error = caught
      }
      expect(SandkeepError.hasCode(error, 'INVALID_ARGUMENT'), JSON.stringify(branch)).toBe(true)
    }
    expect(() => sandkeepTurn({ sessions, conversationId, branch: { editTurn: 0 } })).toThrow(
      /numbered from 1/,
    )
    expect(provider.calls).toHaveLength(0)
  })

  it('a branch past the last turn fails the call with a clear error, before the model, and changes nothing', async () => {
    await twoTurns()
    const before = await snapshotOfSession()
    const calls = provider.calls.length
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [
        { editTurn: 3 },
        'INVALID_ARGUMENT',
        /editTurn: 3.*current branch has 2 turn\(s\).*Nothing was changed/,
      ],
      [{ fromTurn: 5 }, 'CHECKPOINT_NOT_FOUND', /5/],
      [{ checkpoint: 'ck_AAAAAAAAAAAAAAAAAAAAAA' }, 'CHECKPOINT_NOT_FOUND', /Nothing was changed/],
    ]
    for (const [branch, code, message] of cases) {
      const { model, prompts } = scriptedModel([{ text: 'never' }])
      const turn = sandkeepTurn({ sessions, conversationId, branch: branch as never })
      const error = await turn.generateText({ model, prompt: 'go' }).catch((e: unknown) => e)
      expect(SandkeepError.hasCode(error, code as never), JSON.stringify(branch)).toBe(true)
      expect((error as Error).message).toMatch(message)
      expect(prompts).toHaveLength(0)
      expect(await turn.ended).toBeUndefined()
    }
    expect(provider.calls.length).toBe(calls)
    expect(await snapshotOfSession()).toEqual(before)
  })

  it('regenerate with no turn yet fails the stream with INVALID_ARGUMENT', async () => {
    const { model, prompts } = scriptedModel([{ text: 'never' }])
    const turn = sandkeepTurn({ sessions, conversationId, branch: { regenerate: true } })
    const errors: unknown[] = []
    const result = turn.streamText({ model, prompt: 'go', onError: ({ error }) => void errors.push(error) })
    for await (const _ of result.fullStream) {
      // read to the end
    }
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatchObject({ code: 'INVALID_ARGUMENT', message: /needs a turn to answer again/ })
    expect(prompts).toHaveLength(0)
    expect(await sessions.getSession(conversationId)).toBeNull()
  })

  it('while a turn of the conversation runs: SESSION_BUSY, and nothing rewound', async () => {
    await twoTurns()
    const running = await sessions.beginTurn(conversationId)
    const before = await snapshotOfSession()
    const { model } = scriptedModel([{ text: 'never' }])
    const turn = sandkeepTurn({ sessions, conversationId, branch: { regenerate: true } })
    await expect(turn.generateText({ model, prompt: 'go' })).rejects.toMatchObject({ code: 'SESSION_BUSY' })
    expect(await snapshotOfSession()).toEqual(before)
    await running.end()
  })
})

describe('the checkpoint in UI message metadata', () => {
  /** Streams one turn into a UI message (as useChat builds it) with the turn's metadata callback. */
  async function streamToMessage(steps: ScriptStep[], extra: Record<string, unknown> = {}) {
    const { model } = scriptedModel(steps)
    const turn = sandkeepTurn({ sessions, conversationId, ...extra })
    const result = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(steps.length + 1) })
    const stream = result.toUIMessageStream({
      messageMetadata: turn.messageMetadata(({ part }) =>
        part.type === 'start' ? { model: 'mock' } : undefined,
      ),
    })
    let message: UIMessage | undefined
    for await (const update of readUIMessageStream({ stream })) message = update
    return { message: message!, turn }
  }

  it('the finish carries { sandkeep: { checkpoint, parentCheckpoint, turn, ... } }: small, JSON-safe, no manifest', async () => {
    const { message, turn } = await streamToMessage([writeStep(1, 'one.txt'), { text: 'one' }])
    const checkpoint = turn.checkpoint!
    expect(message.metadata).toEqual({
      model: 'mock',
      sandkeep: {
        checkpoint: checkpoint.id,
        parentCheckpoint: null,
        turn: 1,
        snapshotId: checkpoint.snapshot!.snapshotId,
        journalLength: 2,
        createdAt: checkpoint.createdAt,
      },
    })
    const second = await streamToMessage([{ text: 'two' }])
    expect(sandkeepMetadataOf(second.message)?.parentCheckpoint).toBe(checkpoint.id)
    expect(JSON.parse(JSON.stringify(message.metadata))).toEqual(message.metadata)
    expect(sandkeepMetadataOf(message)?.turn).toBe(1)
  })

  it('the finish waits for the checkpoint, not for the pause that follows it', async () => {
    const pauseGate = Promise.withResolvers<void>()
    const slowPause = {
      ...provider,
      pause: async (sandboxId: string, options?: { signal?: AbortSignal }) => {
        await pauseGate.promise
        return provider.pause!(sandboxId, options)
      },
    }
    sessions = createSessionManager({ store, provider: slowPause, checkpoints: { every: 'turn', keep: 10 } })
    const { message, turn } = await streamToMessage([writeStep(1, 'one.txt'), { text: 'one' }])
    expect(sandkeepMetadataOf(message)).toMatchObject({ turn: 1 })
    expect(turn.checkpoint?.turn).toBe(1)
    let ended = false
    void turn.ended.then(() => {
      ended = true
    })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(ended).toBe(false)
    pauseGate.resolve()
    expect((await turn.ended)?.action).toBe('paused')
  })

  it('a turn that used no tool still counts and carries its turn (it stands on the previous snapshot)', async () => {
    await streamToMessage([writeStep(1, 'one.txt'), { text: 'one' }])
    const { message } = await streamToMessage([{ text: 'just talk' }])
    expect(sandkeepMetadataOf(message)).toMatchObject({ turn: 2, journalLength: 2 })
  })

  it('branchFromMessages: the chat behind the head restores; a normal request does not', async () => {
    const first = await streamToMessage([writeStep(1, 'one.txt'), { text: 'one' }])
    const user = (text: string): UIMessage => ({
      id: randomUUID(),
      role: 'user',
      parts: [{ type: 'text', text }],
    })
    const second = await streamToMessage([writeStep(2, 'two.txt'), { text: 'two' }], {
      branch: branchFromMessages([user('a'), first.message, user('b')]),
    })
    expect(second.turn.report?.outcome).toBe('resumed')
    // Regenerating the second answer: the chat sends the history without it.
    const history = [user('a'), first.message, user('b')]
    expect(branchFromMessages(history)).toEqual({ checkpoint: first.turn.checkpoint!.id })
    expect(branchFromMessages([...history, second.message, user('c')])).toEqual({
      checkpoint: second.turn.checkpoint!.id,
    })
    expect(branchFromMessages([user('a')])).toBeUndefined()
    const again = await streamToMessage([lookStep(['two.txt']), { text: 'again' }], {
      branch: branchFromMessages(history),
    })
    expect(again.turn.report?.restored).toMatchObject({ kind: 'rewound', turn: 1 })
    expect(sandkeepMetadataOf(again.message)?.turn).toBe(2)
  })

  it('metadata a client altered is refused, not guessed around', () => {
    for (const sandkeep of [{ turn: '2' }, { turn: 0 }, { turn: 1, checkpoint: 'a b' }, null, 'x']) {
      expect(() => branchFromMessages([{ role: 'assistant', metadata: { sandkeep } }])).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      )
    }
  })
})
