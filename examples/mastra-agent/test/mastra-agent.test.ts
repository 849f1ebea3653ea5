import { describe, expect, it } from 'vitest'
import { main } from '../src/main.ts'

describe('mastra-agent example', () => {
  it('keeps the counter over turns, tells the model about the restart, and branches a clone', async () => {
    const turns = await main(() => {})
    expect(turns.map((turn) => turn.outcome)).toEqual(['created', 'resumed', 'resumed', 'forked', 'resumed'])
    expect(turns[1]?.toolOutputs[0]?.trim()).toBe('42')
    expect(turns[2]?.toolOutputs[0]).toMatch(/^Notice: .*running processes[\s\S]*\n42\s*$/)
    expect(turns[3]?.toolOutputs[0]?.trim()).toBe('84')
    expect(turns[4]?.toolOutputs[0]?.trim()).toBe('42')
  })
})
