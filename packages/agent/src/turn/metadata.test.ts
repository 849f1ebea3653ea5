import { describe, expect, it } from 'vitest'
import { checkBranch } from './branch.js'
import { branchFromMessages, sandkeepMetadataOf } from './metadata.js'

/** The fields of the AI SDK's UIMessage these tests write (this package names no framework). */
type UIMessage = {
  id: string
  role: 'user' | 'assistant'
  parts: Array<{ type: 'text'; text: string }>
  metadata?: unknown
}

const user = (id: string, text = id): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] })
const answer = (
  id: string,
  checkpoint: string,
  parentCheckpoint: string | null,
  turn: number,
): UIMessage => ({
  id,
  role: 'assistant',
  parts: [{ type: 'text', text: id }],
  metadata: {
    sandkeep: { checkpoint, parentCheckpoint, turn, snapshotId: null, journalLength: turn, createdAt: 1 },
  },
})

const u1 = user('u1')
const a1 = answer('a1', 'ck_one', null, 1)
const u2 = user('u2')
const a2 = answer('a2', 'ck_two', 'ck_one', 2)
const b2 = answer('b2', 'ck_two_again', 'ck_one', 2)

describe('branchFromMessages', () => {
  it('names the last checkpoint id of the history, whichever branch the history is', () => {
    expect(branchFromMessages([u1, a1, u2, a2, user('u3')])).toEqual({ checkpoint: 'ck_two' })
    // The chat switched to the other answer 2: its branch's id, though both are turn 2.
    expect(branchFromMessages([u1, a1, u2, b2, user('u3')])).toEqual({
      checkpoint: 'ck_two_again',
    })
    // useChat's regenerate sends the history without the answer replaced: the checkpoint it started from.
    expect(branchFromMessages([u1, a1, u2], { trigger: 'regenerate-message', messageId: 'a2' })).toEqual({
      checkpoint: 'ck_one',
    })
    // An edit of message 2 (sendMessage with its id) cuts the history after it.
    expect(
      branchFromMessages([u1, a1, user('u2', 'edited')], { trigger: 'submit-message', messageId: 'u2' }),
    ).toEqual({ checkpoint: 'ck_one' })
  })

  it('with no checkpoint id anywhere, has nothing to do: never "before the first turn" by omission', () => {
    const bare = (message: UIMessage): UIMessage => ({
      id: message.id,
      role: message.role,
      parts: message.parts,
    })
    expect(branchFromMessages([])).toBeUndefined()
    expect(branchFromMessages([u1])).toBeUndefined()
    expect(branchFromMessages([u1, bare(a1), u2, bare(a2), user('u3')])).toBeUndefined()
    expect(branchFromMessages([user('u3')], { trigger: 'submit-message' })).toBeUndefined()
  })

  it("a regenerate from a client that sends one message is the head's parent", () => {
    expect(branchFromMessages([u2], { trigger: 'regenerate-message', messageId: 'a2' })).toEqual({
      regenerate: true,
    })
  })

  it('reads a history a server rebuilt from its store, the message named by messageId still in it', () => {
    // Regenerate of a2 with a2 in the history: a2's own parent.
    expect(branchFromMessages([u1, a1, u2, a2], { trigger: 'regenerate-message', messageId: 'a2' })).toEqual({
      checkpoint: 'ck_one',
    })
    // An edit of u2 with the later messages still there: only what came before u2 counts.
    expect(branchFromMessages([u1, a1, u2, a2], { trigger: 'submit-message', messageId: 'u2' })).toEqual({
      checkpoint: 'ck_one',
    })
    // Regenerating the answer of a user message keeps that message, and the checkpoint before it.
    expect(branchFromMessages([u1, a1, u2, a2], { trigger: 'regenerate-message', messageId: 'u2' })).toEqual({
      checkpoint: 'ck_one',
    })
  })

  it('metadata written before checkpoint ids names none; metadata a client altered is refused', () => {
    const legacy: UIMessage = {
      ...a1,
      metadata: { sandkeep: { turn: 1, checkpoint: { snapshotId: 's', journalLength: 2, createdAt: 1 } } },
    }
    expect(sandkeepMetadataOf(legacy)).toBeUndefined()
    expect(branchFromMessages([u1, legacy, u2])).toBeUndefined()
    for (const sandkeep of [
      { turn: '2', checkpoint: 'ck_a', parentCheckpoint: null },
      { turn: 1, checkpoint: 'ck a', parentCheckpoint: null },
      { turn: 1, checkpoint: 'x'.repeat(300), parentCheckpoint: null },
      { turn: 1, checkpoint: 'ck_a', parentCheckpoint: 7 },
      { turn: 0, checkpoint: 'ck_a', parentCheckpoint: null },
      null,
      'x',
    ]) {
      expect(() => branchFromMessages([{ role: 'assistant', metadata: { sandkeep } }])).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      )
    }
    expect(() => branchFromMessages([u1], { trigger: 'resume-stream' as 'submit-message' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
  })
})

describe('checkBranch', () => {
  it('takes a checkpoint id or null, and the older shapes; refuses a malformed id', () => {
    expect(checkBranch({ checkpoint: 'ck_AbC-1' })).toEqual({ checkpoint: 'ck_AbC-1' })
    expect(checkBranch({ checkpoint: null })).toEqual({ checkpoint: null })
    expect(checkBranch({ regenerate: true })).toEqual({ regenerate: true })
    expect(checkBranch({ fromTurn: 0 })).toEqual({ fromTurn: 0 })
    for (const checkpoint of ['', 'a\nb', 'x'.repeat(257), 5, {}]) {
      expect(() => checkBranch({ checkpoint })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    }
  })
  it('names the adapter that called it in its messages (sandkeepTurn by default)', () => {
    expect(() => checkBranch({ nope: 1 })).toThrow(/^sandkeepTurn: branch must be one of/)
    expect(() => checkBranch({ editTurn: 0 }, 'sandkeepGraph')).toThrow(/^sandkeepGraph: branch\.editTurn/)
  })
})
