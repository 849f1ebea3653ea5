import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  defaultTranscriptPath,
  loadTranscript,
  parseTranscript,
  resolveTranscriptPath,
  TranscriptError,
  transcriptsDir,
} from './transcript.js'
import { checkToolInputs } from './transcript-tool-inputs.js'

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

  it('refuses a FIFO, a terminal device and an oversized file before reading them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandkeep-transcript-fifo-'))
    try {
      const fifo = join(dir, 'chat.json')
      execFileSync('mkfifo', [fifo])
      // No writer ever opens the FIFO: a plain read would wait for one forever.
      await expect(loadTranscript(fifo)).rejects.toThrow(
        /cannot read the transcript \(not a regular file: give the path of a \.json file\)/,
      )
      await expect(loadTranscript('/dev/null')).rejects.toThrow(/not a regular file/)
      const big = join(dir, 'big.json')
      writeFileSync(big, Buffer.alloc(2 * 1024 * 1024 + 1, 0x20))
      await expect(loadTranscript(big)).rejects.toThrow(/cannot read the transcript \(larger than 2 MiB\)/)
      await expect(loadTranscript(dir)).rejects.toThrow(/cannot read the transcript \(is a directory\)/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses duplicate health check names', () => {
    const check = { kind: 'file', name: 'f', path: '/home/user/a' }
    expect(problems({ ...valid, healthChecks: [check, check] })[0]).toMatch(/healthChecks\[1\], field name/)
  })

  it('a bare --transcript name is looked for in the current directory (with and without .json) before the shipped ones', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'sandkeep-transcript-'))
    try {
      writeFileSync(join(cwd, 'recipes.json'), JSON.stringify(valid))
      writeFileSync(join(cwd, 'notes'), JSON.stringify(valid))
      writeFileSync(join(cwd, 'data-analysis.json'), JSON.stringify(valid))
      expect(resolveTranscriptPath('recipes', cwd)).toBe(join(cwd, 'recipes.json'))
      expect(resolveTranscriptPath('recipes.json', cwd)).toBe(join(cwd, 'recipes.json'))
      expect(resolveTranscriptPath('notes', cwd)).toBe(join(cwd, 'notes'))
      // A file in the current directory wins over a shipped transcript of the same name.
      expect(resolveTranscriptPath('data-analysis', cwd)).toBe(join(cwd, 'data-analysis.json'))
      expect(resolveTranscriptPath('./sub/x.json', cwd)).toBe(join(cwd, 'sub/x.json'))
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
    expect(resolveTranscriptPath('data-analysis', tmpdir())).toBe(join(transcriptsDir, 'data-analysis.json'))
    expect(resolveTranscriptPath(undefined)).toBe(defaultTranscriptPath)
  })

  it('a bare name found nowhere is an error listing every place tried and the shipped names', () => {
    let error: TranscriptError | undefined
    try {
      resolveTranscriptPath('nothing-here', '/nonexistent-dir')
    } catch (caught) {
      error = caught as TranscriptError
    }
    expect(error).toBeInstanceOf(TranscriptError)
    expect(error?.problems).toEqual([
      `no transcript named "nothing-here"; tried /nonexistent-dir/nothing-here, /nonexistent-dir/nothing-here.json, ${join(transcriptsDir, 'nothing-here.json')}`,
      'shipped transcripts: branching, data-analysis',
    ])
  })

  it('every tool-input error of every turn is reported with its JSON path, in plain words', async () => {
    const transcript = parseTranscript(
      JSON.stringify({
        version: 1,
        title: 't',
        turns: [
          {
            user: 'a',
            toolCalls: [
              { tool: 'runCode', input: { code: 5, language: 'ruby' } },
              { tool: 'writeFile', input: { path: '/home/user/a' } },
            ],
            text: 'x',
          },
          { user: 'b', toolCalls: [{ tool: 'runCommand', input: { command: ['ls'] } }], text: 'y' },
        ],
      }),
      'chat.json',
    )
    let error: TranscriptError | undefined
    await checkToolInputs(transcript).catch((caught: unknown) => {
      error = caught as TranscriptError
    })
    expect(error).toBeInstanceOf(TranscriptError)
    const lines = error?.problems ?? []
    expect(lines).toContain('chat.json: turn 1, field toolCalls[0].input.code: expected string, got number 5')
    expect(
      lines.some((line) =>
        line.startsWith('chat.json: turn 1, field toolCalls[0].input.language: expected one of'),
      ),
    ).toBe(true)
    expect(lines).toContain('chat.json: turn 1, field toolCalls[1].input.content: missing (expected string)')
    expect(lines).toContain(
      'chat.json: turn 2, field toolCalls[0].input.command: expected string, got an array',
    )
    for (const line of lines) expect(line).not.toMatch(/Invalid input/)
  })
})
