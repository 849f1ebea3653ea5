import { describe, expect, it } from 'vitest'
import { main } from '../src/main.ts'

describe('langgraph-agent example', () => {
  it('three turns, time travel to turn 1 and back to the turn-3 branch, each with its own sandbox state', async () => {
    const seen = await main(() => {})
    expect(seen).toEqual([
      { label: 'turn 1', x: '1', files: ['t1.txt'] },
      { label: 'turn 2', x: '2', files: ['t1.txt', 't2.txt'] },
      { label: 'turn 3', x: '3', files: ['t1.txt', 't2.txt', 't3.txt'] },
      { label: 'time travel to turn 1', x: '1', files: ['t1.txt'] },
      { label: 'back on the turn-3 branch', x: '3', files: ['t1.txt', 't2.txt', 't3.txt'] },
    ])
  })
})
