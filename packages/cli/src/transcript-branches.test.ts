import { describe, expect, it } from 'vitest'
import { loadTranscript, parseTranscript, TranscriptError, transcriptsDir } from './transcript.js'

function transcript(turns: Array<Record<string, unknown>>) {
  return parseTranscript(
    JSON.stringify({ version: 1, title: 't', turns: turns.map((turn) => ({ text: 'ok', ...turn })) }),
    'chat.json',
  )
}

function problems(turns: Array<Record<string, unknown>>): string[] {
  try {
    transcript(turns)
  } catch (error) {
    expect(error).toBeInstanceOf(TranscriptError)
    return (error as TranscriptError).problems
  }
  throw new Error('expected a TranscriptError')
}

describe('transcript branches', () => {
  it('resolve a regenerate, an edit and a fork to the checkpoint each goes back to', () => {
    const resolved = transcript([
      { user: 'a' },
      { user: 'b' },
      { user: 'b again', branch: { kind: 'regenerate' } },
      { user: 'c' },
      { user: 'b edited', branch: { kind: 'edit', turn: 2 } },
      { user: 'side', conversation: 'side', branch: { kind: 'fork', atTurn: 1 } },
      { user: 'side 2', conversation: 'side' },
      { user: 'latest', conversation: 'copy', branch: { kind: 'fork', from: 'side' } },
    ])
    expect(resolved.branches).toBe(true)
    expect(
      resolved.turns.map(({ conversation, chatTurn, branch }) => ({ conversation, chatTurn, branch })),
    ).toEqual([
      { conversation: 'main', chatTurn: 1, branch: undefined },
      { conversation: 'main', chatTurn: 2, branch: undefined },
      { conversation: 'main', chatTurn: 2, branch: { kind: 'regenerate', toTurn: 1 } },
      { conversation: 'main', chatTurn: 3, branch: undefined },
      { conversation: 'main', chatTurn: 2, branch: { kind: 'edit', toTurn: 1 } },
      { conversation: 'side', chatTurn: 2, branch: { kind: 'fork', from: 'main', atTurn: 1 } },
      { conversation: 'side', chatTurn: 3, branch: undefined },
      { conversation: 'copy', chatTurn: 4, branch: { kind: 'fork', from: 'side', atTurn: 3 } },
    ])
  })

  it("resolve a switch back to an earlier answer to that answer's turn, on its branch", () => {
    const resolved = transcript([
      { user: 'a' },
      { user: 'b' },
      { user: 'b again', branch: { kind: 'regenerate' } },
      { user: 'c' },
      { user: 'side', conversation: 'side', branch: { kind: 'fork' } },
      { user: 'back to the first b', branch: { kind: 'switch', toAnswerOf: 2 } },
      { user: 'and on' },
    ])
    expect(resolved.turns.map(({ chatTurn, branch }) => ({ chatTurn, branch }))).toEqual([
      { chatTurn: 1, branch: undefined },
      { chatTurn: 2, branch: undefined },
      { chatTurn: 2, branch: { kind: 'regenerate', toTurn: 1 } },
      { chatTurn: 3, branch: undefined },
      { chatTurn: 4, branch: { kind: 'fork', from: 'main', atTurn: 3 } },
      { chatTurn: 3, branch: { kind: 'switch', toAnswerOf: 2, toTurn: 2 } },
      { chatTurn: 4, branch: undefined },
    ])
    expect(
      problems([
        { user: 'a' },
        { user: 'side', conversation: 'side', branch: { kind: 'fork' } },
        { user: 'b', branch: { kind: 'switch', toAnswerOf: 2 } },
        { user: 'c', branch: { kind: 'switch', toAnswerOf: 4 } },
      ]),
    ).toEqual([
      'chat.json: turn 3, field branch.toAnswerOf: turn 2 is a turn of "side", not of "main": fork to go to another conversation',
      'chat.json: turn 4, field branch.toAnswerOf: name an earlier turn of the transcript (1 to 3), got 4',
    ])
    expect(problems([{ user: 'a', branch: { kind: 'switch', toAnswerOf: 0 } }])[0]).toMatch(
      /turn 1, field branch\.toAnswerOf/,
    )
  })

  it('a transcript without branches takes no checkpoints', () => {
    expect(transcript([{ user: 'a' }, { user: 'b' }]).branches).toBe(false)
  })

  it('refuse branches that cannot be carried out, naming the turn and the field', () => {
    expect(
      problems([
        { user: 'a', branch: { kind: 'regenerate' } },
        { user: 'b', branch: { kind: 'edit', turn: 3 } },
        { user: 'c', conversation: 'ghost' },
        { user: 'd', conversation: 'main', branch: { kind: 'fork' } },
        { user: 'e', conversation: 'side', branch: { kind: 'fork', from: 'nowhere' } },
        { user: 'f', conversation: 'side', branch: { kind: 'fork', atTurn: 9 } },
      ]),
    ).toEqual([
      'chat.json: turn 1, field branch.kind: "regenerate" needs an earlier answer in "main" to regenerate',
      'chat.json: turn 2, field branch.turn: "main" has 0 turn(s) before this one; edit one of them',
      'chat.json: turn 3, field conversation: "ghost" has no turns yet: its first turn must fork it ({"kind": "fork", "from": "main"})',
      'chat.json: turn 4, field conversation: "main" already exists: a fork starts a new conversation (name it in "conversation")',
      'chat.json: turn 5, field branch.from: no conversation "nowhere" before this turn',
      'chat.json: turn 6, field branch.atTurn: "main" has 0 turn(s) before this one',
    ])
    expect(problems([{ user: 'a', branch: { kind: 'edit' } }])[0]).toMatch(
      /turn 1, field branch\.turn: missing/,
    )
    expect(problems([{ user: 'a', conversation: 'Main!' }])[0]).toMatch(
      /turn 1, field conversation: expected a label/,
    )
  })

  it('the shipped branching transcript regenerates, edits, forks and switches back', async () => {
    const shipped = await loadTranscript(`${transcriptsDir}branching.json`)
    expect(shipped.branches).toBe(true)
    expect(shipped.turns.map((turn) => turn.branch?.kind ?? null)).toEqual([
      null,
      null,
      'regenerate',
      'edit',
      'fork',
      null,
      'switch',
    ])
    expect(shipped.turns[6]).toMatchObject({
      chatTurn: 3,
      branch: { kind: 'switch', toAnswerOf: 3, toTurn: 2 },
    })
    expect(shipped.turns[4]).toMatchObject({ conversation: 'rankine', branch: { from: 'main', atTurn: 2 } })
  })
})
