import { describe, expect, it } from 'vitest'
import { main } from '../src/main.ts'

describe('custom-loop example', () => {
  it('keeps interpreter memory and files across hand-written turns', async () => {
    const lines: string[] = []
    const results = await main((line) => lines.push(line))
    expect(results).toHaveLength(3)
    expect(results[0]?.report?.outcome).toBe('created')
    // Turn 2 computes on the variable turn 1 left in the interpreter: only a kept (or rehydrated) memory gives 42.
    expect(JSON.stringify(results[1]?.toolCalls[0]?.output)).toContain('42')
    expect(results[1]?.report?.outcome).toBe('resumed')
    expect(results[1]?.report?.survived.memory).toBe(true)
    expect(JSON.stringify(results[2]?.toolCalls[0]?.output)).toContain('x started at 41')
    expect(lines.some((line) => line.startsWith('assistant  x is now 42.'))).toBe(true)
  })
})
