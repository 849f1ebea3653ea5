import { describe, expect, it } from 'vitest'
import { main } from '../src/main.ts'

describe('openai-agents example', () => {
  it('keeps the interpreter and the files across runs, and finishes an approved run on the same sandbox', async () => {
    const results = await main(() => {})
    expect(results.map((run) => run.report?.outcome)).toEqual(['created', 'resumed', 'resumed', 'resumed'])
    expect(results[0]?.outputs[0]).toContain('12')
    expect(results[0]?.outputs[1]).toContain('Data lives in data.csv.')
    // Run 2 appends to the list run 1 left in the interpreter: only a kept memory gives 18.
    expect(results[1]?.outputs[0]).toContain('18')
    expect(results[2]?.interrupted).toBe(true)
    expect(results[3]?.outputs.at(-1)).toContain('4')
    expect(results[3]?.finalOutput).toBe('Removed data.csv; the four rows stay in memory.')
    expect(new Set(results.map((run) => run.report?.sandboxId)).size).toBe(1)
  })
})
