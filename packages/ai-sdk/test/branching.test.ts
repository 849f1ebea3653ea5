// A chat's branches through sandkeepTurn and branchFromMessages, as examples/chat-branching and any useChat
// app use them, on the real stack: a local-e2b host driven by the unmodified E2B SDK, checkpoints at every
// turn, the real Redis under a random prefix (SANDKEEP_BRANCHING_STORE=memory: the memory store). The two defects of issue 31 each have a test here that failed before
// the checkpoint tree: switching back to the first answer 2 ran on the regenerated answer's state, and a
// history without sandkeep metadata rewound the conversation to before its first turn.
import { randomUUID } from 'node:crypto'
import { SandkeepError } from '@sandkeep/core'
import { createRedisSessionStore } from '@sandkeep/redis'
import { readUIMessageStream, stepCountIs, type UIMessage } from 'ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type BranchRequest, branchFromMessages, sandkeepMetadataOf, sandkeepTurn } from '../src/index.js'
import { type ScriptStep, scriptedModel, toolResultsIn } from '../src/mock-model.test-support.js'
import { type LocalSessions, startLocalSessions, stopLocalSessions } from './helpers.js'

const tenant = `aisdk-branching-${randomUUID().slice(0, 8)}`
const conversations: string[] = []
let local: LocalSessions

const storeKind = process.env.SANDKEEP_BRANCHING_STORE === 'memory' ? 'memory' : 'redis'

beforeAll(async () => {
  local = await startLocalSessions({
    ...(storeKind === 'redis'
      ? { store: createRedisSessionStore({ prefix: `skaitest:${randomUUID().slice(0, 12)}` }) }
      : {}),
    checkpoints: { every: 'turn', keep: 10 },
    onTurnEnd: 'pause',
  })
}, 120_000)
afterAll(() => stopLocalSessions(local ?? {}, conversations, tenant), 120_000)

function newConversation(): string {
  const id = `chat-${randomUUID()}`
  conversations.push(id)
  return id
}

const user = (text: string): UIMessage => ({
  id: randomUUID(),
  role: 'user',
  parts: [{ type: 'text', text }],
})

/** A message as an app that keeps no metadata stores it: role and content. */
const stripped = (message: UIMessage): UIMessage => ({
  id: message.id,
  role: message.role,
  parts: message.parts,
})

/** Looks at `x` (0 when unset), then sets it (journaled as setup, so a restore rebuilds it), then talks. */
function lookThenSet(x: number | undefined): ScriptStep[] {
  const look: ScriptStep = {
    toolCalls: [{ toolName: 'runCode', input: { code: "globals().get('x', 0)" } }],
  }
  const set: ScriptStep[] =
    x === undefined
      ? []
      : [{ toolCalls: [{ toolName: 'runCode', input: { code: `x = ${x}`, setup: true } }] }]
  return [look, ...set, { text: x === undefined ? 'looked' : `x is ${x}` }]
}

/**
 * One request of a chat: the history it sends (what the new answer follows) and what DefaultChatTransport
 * sends besides; the answer is streamed into a UI message as useChat builds it. Returns the answer and the
 * `x` its first tool call found in the sandbox.
 */
async function request(
  conversationId: string,
  history: UIMessage[],
  x: number | undefined,
  how?: BranchRequest,
) {
  const steps = lookThenSet(x)
  const { model, prompts } = scriptedModel(steps)
  const turn = sandkeepTurn({
    sessions: local.sessions,
    conversationId,
    tenant,
    branch: branchFromMessages(history, how),
  })
  const result = turn.streamText({ model, prompt: 'go', stopWhen: stepCountIs(steps.length + 1) })
  let answer: UIMessage | undefined
  for await (const update of readUIMessageStream({
    // The server names the answer (useChat would name it on the client otherwise).
    stream: result.toUIMessageStream({
      messageMetadata: turn.messageMetadata(),
      generateMessageId: randomUUID,
    }),
  })) {
    answer = update
  }
  await turn.ended
  const looked = toolResultsIn(prompts[1])[0]?.output as { result?: string; error?: unknown } | undefined
  if (looked?.result === undefined) throw new Error(`the look found no result: ${JSON.stringify(looked)}`)
  return { answer: answer!, sawX: looked.result, report: turn.report }
}

describe(`a chat tree through sandkeepTurn and branchFromMessages (${storeKind} store, local-e2b)`, () => {
  it('switching back to the first answer 2 and going on runs on x = 2, not on the regenerated x = 20', async () => {
    const id = newConversation()
    const u1 = user('set x to 1')
    const one = await request(id, [u1], 1)
    expect(one.sawX).toBe('0')
    const u2 = user('set x to 2')
    const two = await request(id, [u1, one.answer, u2], 2)
    expect(two.sawX).toBe('1')

    // Regenerate answer 2, as useChat does: the history without it, with trigger and messageId.
    const again = await request(id, [u1, one.answer, u2], 20, {
      trigger: 'regenerate-message',
      messageId: two.answer.id,
    })
    expect(again.sawX).toBe('1')
    expect(again.report?.outcome).toBe('rewound')

    // The "< 1/2 >" switcher back to the first answer 2, then message 3: the history ends on that answer.
    const u3 = user('what is x?')
    const back = await request(id, [u1, one.answer, u2, two.answer, u3], undefined)
    // Before the tree: { fromTurn: 2 } equalled the turn count, nothing was restored, and this was '20'.
    expect(back.sawX).toBe('2')
    expect(back.report?.outcome).toBe('rewound')

    // Nothing was deleted: both answers 2 keep their checkpoints, siblings under answer 1's.
    const first = sandkeepMetadataOf(one.answer)!
    const [a, b] = [sandkeepMetadataOf(two.answer)!, sandkeepMetadataOf(again.answer)!]
    expect(a.parentCheckpoint).toBe(first.checkpoint)
    expect(b.parentCheckpoint).toBe(first.checkpoint)
    expect(a.checkpoint).not.toBe(b.checkpoint)
    const tree = await local.sessions.listCheckpoints(id, { tenant })
    expect(tree.head).toBe(sandkeepMetadataOf(back.answer)!.checkpoint)
    expect(tree.checkpoints.map((checkpoint) => checkpoint.id)).toEqual(
      expect.arrayContaining([first.checkpoint, a.checkpoint, b.checkpoint]),
    )
    // And the regenerated branch is still there to go back to.
    const other = await request(id, [u1, one.answer, u2, again.answer, user('and now?')], undefined)
    expect(other.sawX).toBe('20')
  }, 240_000)

  it('a history without sandkeep metadata goes on from the head: it never wipes the sandbox', async () => {
    const id = newConversation()
    const u1 = user('set x to 1')
    const one = await request(id, [u1], 1)
    // An app that stores role and content only sends the history back without metadata.
    const u2 = user('what is x?')
    const two = await request(id, [u1, stripped(one.answer), u2], 5)
    // Before the tree: { fromTurn: 0 } rewound to before the first turn, and x was gone ('0').
    expect(two.sawX).toBe('1')
    expect(branchFromMessages([u1, stripped(one.answer), u2])).toBeUndefined()
    expect(two.report?.outcome).toBe('resumed')
    // A client that sends only the last message (the AI SDK's prepareSendMessagesRequest recipe).
    const three = await request(id, [user('and now?')], undefined)
    expect(three.sawX).toBe('5')
    expect((await local.sessions.listCheckpoints(id, { tenant })).checkpoints).toHaveLength(3)
  }, 240_000)

  it('a client that sends only the last message can still regenerate (trigger and messageId)', async () => {
    const id = newConversation()
    await request(id, [user('set x to 1')], 1)
    const two = await request(id, [user('set x to 2')], 2)
    expect(two.sawX).toBe('1')
    // Regenerate: the client sends the user message alone; the head's turn started from answer 1's state.
    const how = { trigger: 'regenerate-message', messageId: two.answer.id } as const
    expect(branchFromMessages([user('set x to 2')], how)).toEqual({ regenerate: true })
    const again = await request(id, [user('set x to 2')], 3, how)
    expect(again.sawX).toBe('1')
    // A server that rebuilt the history from its store, the regenerated answer still in it: its parent.
    const stored = [user('set x to 1'), user('set x to 2'), again.answer]
    expect(branchFromMessages(stored, { trigger: 'regenerate-message', messageId: again.answer.id })).toEqual(
      {
        checkpoint: sandkeepMetadataOf(again.answer)!.parentCheckpoint,
      },
    )
  }, 240_000)

  it('a checkpoint id the conversation does not have is refused before anything changes, saying what to do', async () => {
    const id = newConversation()
    const u1 = user('set x to 1')
    const one = await request(id, [u1], 1)
    const elsewhere = newConversation()
    const foreign = await request(elsewhere, [user('set x to 9')], 9)
    const before = {
      record: await local.sessions.getSession(id, { tenant }),
      tree: await local.sessions.listCheckpoints(id, { tenant }),
    }
    const withCheckpoint = (checkpoint: string): UIMessage => ({
      ...one.answer,
      metadata: { sandkeep: { ...sandkeepMetadataOf(one.answer)!, checkpoint } },
    })
    const attempts = [
      // altered by the client
      withCheckpoint('ck_AAAAAAAAAAAAAAAAAAAAAA'),
      // another conversation's
      withCheckpoint(sandkeepMetadataOf(foreign.answer)!.checkpoint),
    ]
    for (const altered of attempts) {
      const turn = sandkeepTurn({
        sessions: local.sessions,
        conversationId: id,
        tenant,
        branch: branchFromMessages([u1, altered, user('go on')]),
      })
      const { model } = scriptedModel(lookThenSet(undefined))
      const error = await turn.generateText({ model, prompt: 'go' }).catch((caught: unknown) => caught)
      expect(SandkeepError.hasCode(error, 'CHECKPOINT_NOT_FOUND')).toBe(true)
      expect((error as Error).message).toMatch(/Nothing was changed/)
      expect((error as Error).message).toMatch(/send the history as the server streamed it/)
    }
    // Another tenant's: the same id under a tenant that does not own it.
    const otherTenant = sandkeepTurn({
      sessions: local.sessions,
      conversationId: id,
      tenant: `${tenant}-other`,
      branch: { checkpoint: sandkeepMetadataOf(one.answer)!.checkpoint },
    })
    const { model } = scriptedModel(lookThenSet(undefined))
    const refused = await otherTenant.generateText({ model, prompt: 'go' }).catch((caught: unknown) => caught)
    expect(SandkeepError.isInstance(refused)).toBe(true)
    expect((refused as SandkeepError).code).toMatch(/CHECKPOINT_NOT_FOUND|NOT_FOUND/)
    // A malformed id never reaches the store.
    expect(() =>
      sandkeepTurn({ sessions: local.sessions, conversationId: id, tenant, branch: { checkpoint: 'a\nb' } }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    expect({
      record: await local.sessions.getSession(id, { tenant }),
      tree: await local.sessions.listCheckpoints(id, { tenant }),
    }).toEqual(before)
    const after = await request(id, [u1, one.answer, user('still there?')], undefined)
    expect(after.sawX).toBe('1')
  }, 240_000)
})
