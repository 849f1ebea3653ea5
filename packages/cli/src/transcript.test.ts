import { describe, expect, it } from 'vitest'
import { defaultTranscriptPath, loadTranscript, parseTranscript, TranscriptError } from './transcript.js'

function problems(value: unknown): string[] {
  try {
    parseTranscript(typeof value === 'string' ? value : JSON.stringify(value), 'chat.json')
  } catch (error) {
    expect(error).toBeInstanceOf(TranscriptError)
    return (error as TranscriptError).problems
  }
  throw new Error('expected a TranscriptError')
}

const valid = {
  version: 1,
  title: 't',
  turns: [
    { user: 'hi', toolCalls: [{ tool: 'runCode', input: { code: 'x = 1' } }], text: 'done' },
    { user: 'again', idleBefore: '45m', text: 'ok' },
  ],
}

describe('transcripts', () => {
  it('the shipped default transcript is valid and has the five turns of the issue', async () => {
    const transcript = await loadTranscript(defaultTranscriptPath)
    expect(transcript.turns).toHaveLength(5)
    expect(transcript.turns[4]?.idleBeforeMs).toBe(7_200_000)
    expect(transcript.turns[0]?.toolCalls.map((call) => call.tool)).toEqual(['writeFile', 'runCode'])
  })

  it('parses idle durations and defaults', () => {
    const transcript = parseTranscript(JSON.stringify(valid), 'chat.json')
    expect(transcript.turns[1]).toMatchObject({ index: 2, idleBeforeMs: 2_700_000, toolCalls: [] })
  })

  it('names the file, the turn and the field', () => {
    const bad = structuredClone(valid) as { turns: Array<Record<string, unknown>> }
    ;(bad.turns[0] as { toolCalls: Array<Record<string, unknown>> }).toolCalls[0] = {
      tool: 'runcode',
      input: {},
    }
    expect(problems(bad)).toEqual([
      'chat.json: turn 1, field toolCalls[0].tool: expected one of "runCode", "runCommand", "readFile", "writeFile", "listFiles", got "runcode"',
    ])
    delete bad.turns[1]?.text
    expect(problems(bad)).toContain('chat.json: turn 2, field text: missing (expected string)')
  })

  it('refuses unknown fields, bad idles and a wrong version', () => {
    expect(problems({ ...valid, version: 2 })[0]).toMatch(/^chat\.json: field version: /)
    expect(problems({ ...valid, extra: 1 })).toEqual(['chat.json: unknown field "extra"'])
    const idle = structuredClone(valid)
    ;(idle.turns[1] as { idleBefore: unknown }).idleBefore = 'later'
    expect(problems(idle)[0]).toMatch(/^chat\.json: turn 2, field idleBefore: /)
  })

  it('reports JSON syntax errors with line and column', () => {
    expect(problems('{\n  "version": 1,\n  oops\n}')[0]).toMatch(
      /^chat\.json: not valid JSON \(line 3, column \d+/,
    )
  })

  it('reports a missing file', async () => {
    await expect(loadTranscript('/nonexistent/chat.json')).rejects.toThrow(
      /cannot read the transcript \(no such file\)/,
    )
  })

  it('refuses duplicate health check names', () => {
    const check = { kind: 'file', name: 'f', path: '/home/user/a' }
    expect(problems({ ...valid, healthChecks: [check, check] })[0]).toMatch(/healthChecks\[1\], field name/)
  })
})
