import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { start } from '../src/main.ts'
import { type Observation, runScenario } from '../src/scenario.ts'

type App = Awaited<ReturnType<typeof start>>
let app: App
let observations: Observation[]
const printed: string[] = []

beforeAll(async () => {
  app = await start(0)
  const run = await runScenario(app.url, (line) => printed.push(line))
  observations = run.observations
  for (const conversationId of run.conversations) await app.sessions.endSession(conversationId)
}, 120_000)
afterAll(async () => {
  await app?.close()
})

/** The observation of `action` in `chat`. */
function seen(chat: string, action: string): Observation {
  const found = observations.find((o) => o.chat === chat && o.action === action)
  if (!found) throw new Error(`no observation of ${chat} ${action}; printed:\n${printed.join('\n')}`)
  return found
}

describe('chat-branching example', () => {
  it('the regenerated answer starts without the variable and the file the discarded answer wrote', () => {
    const discarded = seen('shop', 'Apply a 10% discount.')
    expect(discarded).toMatchObject({ turn: 2, variables: "{'prices': [12, 7, 30]}", files: 'prices.txt' })
    const regenerated = seen('shop', '(regenerate the last answer)')
    // Had the sandbox not been rewound, this answer would find discount = 0.1 and discount.txt.
    expect(regenerated).toMatchObject({ turn: 2, variables: "{'prices': [12, 7, 30]}", files: 'prices.txt' })
    expect(regenerated.notice).toMatch(/rewound: the sandbox was set back to its state at the end of turn 1/)
    expect(seen('shop', 'Add 5 for shipping.')).toMatchObject({
      turn: 3,
      variables: "{'prices': [12, 7, 30], 'discount': 0.1}",
      files: 'discount.txt prices.txt',
    })
  })

  it('an edited message starts from the state before its turn: the later turns’ variables and files are gone', () => {
    const edited = seen('shop', '(edit message 2 to "Apply a 20% discount.")')
    expect(edited).toMatchObject({ turn: 2, variables: "{'prices': [12, 7, 30]}", files: 'prices.txt' })
    expect(edited.notice).toMatch(/end of turn 1/)
  })

  it('a fork keeps its own state: a change in the fork is not in the original, and the other way round', () => {
    expect(seen('fork', 'Add 20% tax.')).toMatchObject({
      turn: 3,
      variables: "{'prices': [12, 7, 30], 'discount': 0.2}",
      files: 'discount.txt prices.txt',
      notice: expect.stringMatching(/forked from another one.*end of turn 2/),
    })
    expect(seen('shop', 'Switch to euros.')).toMatchObject({
      turn: 3,
      variables: "{'prices': [12, 7, 30], 'discount': 0.2}",
      files: 'discount.txt prices.txt',
    })
    expect(seen('fork', 'What is set?')).toMatchObject({
      turn: 4,
      variables: "{'prices': [12, 7, 30], 'discount': 0.2, 'tax': 0.2}",
      files: 'discount.txt prices.txt tax.txt',
    })
    expect(seen('shop', 'What is set?')).toMatchObject({
      turn: 4,
      variables: "{'prices': [12, 7, 30], 'discount': 0.2, 'currency': 'EUR'}",
      files: 'currency.txt discount.txt prices.txt',
    })
  })

  it('prints each exchange with its turn and checkpoint', () => {
    expect(printed.join('\n')).toMatch(
      /shop {2}> Load the prices\.\n.*\n.*says {3}Loaded three prices\. {2}\[turn 1, checkpoint: snapshot, 2 journal steps\]/,
    )
    expect(printed).toContain('fork  = forked the chat at turn 2 (its sandbox from the snapshot)')
  })

  it('refuses a request whose metadata a client altered, before any sandbox work', async () => {
    const response = await fetch(`${app.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'altered',
        messages: [{ id: 'm1', role: 'assistant', parts: [], metadata: { sandkeep: { turn: 'two' } } }],
      }),
    })
    expect(response.status).toBe(400)
    expect(await app.sessions.getSession('altered')).toBeNull()
  })
})
