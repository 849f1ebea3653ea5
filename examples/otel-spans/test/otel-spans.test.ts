import { describe, expect, it } from 'vitest'
import { main } from '../src/main.ts'

describe('otel-spans example: the span tree a user sees', () => {
  it('prints a span tree per turn: turn under the caller, resume with its health checks, then pause', async () => {
    const lines: string[] = []
    const turns = await main((line) => lines.push(line))
    expect(turns).toHaveLength(2)
    const second = turns[1]
    const byName = (name: string) => second?.spans.filter((span) => span.name === name) ?? []
    const [request] = byName('chat turn 2')
    const [turn] = byName('sandkeep.turn')
    const [resume] = byName('sandkeep.resume')
    expect(turn?.parentSpanContext?.spanId).toBe(request?.spanContext().spanId)
    expect(resume?.parentSpanContext?.spanId).toBe(turn?.spanContext().spanId)
    expect(resume?.attributes['sandkeep.outcome']).toBe('resumed')
    const checks = byName('sandkeep.health').map((span) => [
      span.attributes['sandkeep.health.name'],
      span.attributes['sandkeep.health.status'],
    ])
    expect(checks).toContainEqual(['notes', 'passed'])
    expect(checks).toContainEqual(['memory', 'passed'])
    expect(byName('sandkeep.pause')[0]?.attributes['sandkeep.pause.mode']).toBe('paused')
    // The printed tree indents the resume under the turn under the caller's span.
    expect(lines).toContain('user: add one  → runCode: 42')
    expect(second?.tree.find((line) => line.trimStart().startsWith('sandkeep.resume'))).toMatch(
      /^ {4}sandkeep\.resume/,
    )
  }, 120_000)
})
