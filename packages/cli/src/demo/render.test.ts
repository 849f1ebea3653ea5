import { PassThrough } from 'node:stream'
import type { ResumeReport } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { createStyle, spinnerLine, visibleLength } from '../terminal.js'
import type { DemoEvent } from './events.js'
import { createHumanRenderer } from './render-human.js'
import { createJsonRenderer } from './render-json.js'
import { checkToolOutput } from './turn.js'

const report: ResumeReport = {
  conversationId: 'c',
  tenant: 'default',
  sandboxId: 'sb2',
  previousSandboxId: 'sb1',
  outcome: 'recreated',
  timings: { storeMs: 2, connectMs: 40, healthMs: 30, rehydrateMs: 12, totalMs: 84 },
  survived: { memory: false, filesystem: false, processes: false },
  checks: [
    { name: 'memory', kind: 'memory', status: 'failed', required: false, probeMs: 1 },
    {
      name: 'web',
      kind: 'port',
      status: 'repaired',
      required: false,
      probeMs: 3,
      repairMs: 200,
      message: 'closed; repaired',
    },
  ],
  stateLost: true,
  retries: 1,
  rehydratedSteps: 3,
}

const events: DemoEvent[] = [
  { type: 'turn-start', turn: 2, user: 'hello' },
  { type: 'tool-call', turn: 2, toolCallId: 't', toolName: 'runCode', input: { code: 'x + 1' } },
  {
    type: 'tool-result',
    turn: 2,
    toolCallId: 't',
    toolName: 'runCode',
    output: { result: '42', stdout: '', stderr: '' },
    ok: true,
  },
  { type: 'text', turn: 2, text: 'It is 42.' },
  {
    type: 'turn-end',
    turn: 2,
    ok: true,
    report,
    end: { action: 'paused', last: true, timings: { workMs: 50, storeMs: 1, pauseMs: 9 } },
    rehydrate: { steps: 3, ms: 12, reason: 'recreated' },
    runningSeconds: 0.3,
    pausedSeconds: 1.5,
  },
]

function collect(stream: PassThrough): () => string {
  let text = ''
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8')
  })
  return () => text
}

describe('renderers', () => {
  it('human: a turn with its timeline, losses and repairs, no ANSI when colour is off', () => {
    const stream = new PassThrough()
    const read = collect(stream)
    const renderer = createHumanRenderer({ stream, color: false, spinner: false })
    for (const event of events) renderer.emit(event)
    renderer.progress('invisible without a spinner')
    renderer.close()
    const out = read()
    expect(out).not.toContain('\u001b[')
    expect(out).not.toContain('invisible')
    expect(out).toContain('✓ → 42')
    expect(out).toContain(
      'timeline   store 3 ms → resume 40 ms (recreated) → health 30 ms → rehydrate 12 ms → work 50 ms → pause 9 ms',
    )
    expect(out).toContain('survived   memory lost · files lost · processes lost')
    expect(out).toContain('repaired web (closed; repaired)')
    expect(out).not.toContain('failed memory')
    expect(out).toContain('rehydrated 3 journal steps (recreated, 12 ms)')
    expect(out).toContain('retried 1 transient provider failure')
    expect(out).toContain('sandbox    sb1 → sb2')
  })

  it('human: a branch, the checkpoint a turn started from and the one it took', () => {
    const stream = new PassThrough()
    const read = collect(stream)
    const renderer = createHumanRenderer({ stream, color: false, spinner: false })
    const snapshot = { snapshotId: 'local/sandkeep-abc:default', keeps: { files: true, memory: false } }
    const branched: DemoEvent[] = [
      {
        type: 'branch',
        turn: 3,
        kind: 'regenerate',
        conversationId: 'c',
        checkpointTurn: 1,
        source: 'snapshot',
        droppedTurns: [2],
        killedSandboxId: 'sb1',
      },
      { type: 'turn-start', turn: 3, user: 'again', conversationId: 'c', conversation: 'main', chatTurn: 2 },
      {
        type: 'turn-end',
        turn: 3,
        ok: true,
        report: {
          ...report,
          outcome: 'rewound',
          restored: { kind: 'rewound', turn: 1, source: 'snapshot', snapshotId: snapshot.snapshotId },
        },
        end: {
          action: 'paused',
          last: true,
          timings: { workMs: 50, storeMs: 1, pauseMs: 9, checkpointMs: 120 },
          checkpoint: {
            id: 'ck_two',
            parentId: 'ck_one',
            turn: 2,
            createdAt: 0,
            sandboxId: 'sb2',
            snapshot,
            journalLength: 4,
            manifest: null,
          },
        },
        rehydrate: null,
        runningSeconds: 0.3,
        pausedSeconds: 1.5,
      },
      {
        type: 'branch',
        turn: 5,
        kind: 'fork',
        conversationId: 'c-side',
        fromConversationId: 'c',
        checkpointTurn: 2,
        source: 'journal',
      },
      {
        type: 'turn-end',
        turn: 5,
        ok: true,
        report: {
          ...report,
          outcome: 'forked',
          restored: {
            kind: 'forked',
            turn: 2,
            source: 'journal',
            snapshotId: 's',
            snapshotLost: true,
            fromConversationId: 'c',
          },
        },
        end: {
          action: 'paused',
          last: true,
          timings: { workMs: 1, storeMs: 1, pauseMs: 1, checkpointMs: 0 },
          checkpoint: {
            id: 'ck_three',
            parentId: 'ck_two',
            turn: 3,
            createdAt: 0,
            sandboxId: 'sb3',
            snapshot: null,
            journalLength: 1,
            manifest: null,
          },
        },
        rehydrate: null,
        runningSeconds: 0.1,
        pausedSeconds: 0,
      },
    ]
    branched.push({
      type: 'branch',
      turn: 6,
      kind: 'switch',
      conversationId: 'c',
      checkpointTurn: 2,
      checkpointId: 'ck_two',
      toAnswerOf: 3,
      source: 'snapshot',
      killedSandboxId: 'sb9',
    })
    for (const event of branched) renderer.emit(event)
    renderer.close()
    const out = read()
    expect(out).toContain(
      '↺  regenerate: c rewound to the end of turn 1 (dropped turn 2, killed sb1; the next turn restores its snapshot)',
    )
    expect(out).toContain('── turn 3/0 · main turn 2 ')
    expect(out).toContain('→ work 50 ms → checkpoint 120 ms → pause 9 ms')
    expect(out).toContain('restored   rewound from turn 1 (snapshot)')
    expect(out).toContain('checkpoint turn 2: snapshot local/sandkeep-abc:default, journal 4 steps')
    expect(out).toContain('⑂  fork: c-side starts from c turn 2')
    expect(out).toContain(
      'restored   forked from c turn 2 (journal: the snapshot was gone, rebuilt from the journal)',
    )
    expect(out).toContain('checkpoint turn 3: journal only (no snapshot), journal 1 step')
    expect(out).toContain(
      '⤺  switch: c back to the answer of turn 3 (checkpoint ck_two, turn 2 of its branch) (killed sb9; nothing deleted; the next turn restores its snapshot)',
    )
  })

  it('json: one parsable object per event line', () => {
    const stream = new PassThrough()
    const read = collect(stream)
    const renderer = createJsonRenderer(stream)
    for (const event of events) renderer.emit(event)
    const lines = read().trim().split('\n')
    expect(lines).toHaveLength(events.length)
    expect(lines.map((line) => JSON.parse(line).type)).toEqual(events.map((event) => event.type))
    expect(JSON.parse(lines[4] ?? '').report.outcome).toBe('recreated')
  })
})

describe('spinner on a terminal (one wider than the terminal wrapped a new line every frame)', () => {
  const spinnerRows = (out: string) =>
    out
      .split(/[\r\n]/)
      .map((row) => row.replace(/\u001b\[2K/g, ''))
      .filter((row) => row.length > 0)

  for (const columns of [80, 60, undefined]) {
    it(`every drawn spinner row fits ${columns ?? 'the default 80'} columns`, () => {
      const stream = Object.assign(new PassThrough(), { isTTY: true, columns })
      const read = collect(stream)
      const renderer = createHumanRenderer({ stream, color: true, spinner: true })
      renderer.progress('ending the session (killing its sandbox) and a much longer progress text than fits')
      let text = ''
      for (const word of 'West brought in 30.2% of the quarter revenue, and the endpoint still answers with the same totals as before.'.split(
        ' ',
      )) {
        text += `${word} `
        renderer.textDelta?.(5, `${word} `)
      }
      renderer.close()
      const rows = spinnerRows(read())
      expect(rows.length).toBeGreaterThan(5)
      for (const row of rows) expect(visibleLength(row)).toBeLessThanOrEqual((columns ?? 80) - 1)
      // The newest words are the ones kept.
      expect(rows.at(-1)).toContain('same totals as before.')
      expect(text.length).toBeGreaterThan(80)
    })
  }

  it('a spinner line is cut with an ellipsis, never wider than the terminal', () => {
    const line = spinnerLine('x'.repeat(200), 1234, 0, createStyle(true), 80)
    expect(visibleLength(line)).toBe(79)
    expect(line).toContain('…')
    expect(line).toContain('1.2s')
    expect(visibleLength(spinnerLine('short', 0, 0, createStyle(false), 80))).toBe('⠋ short 0.0s'.length)
  })
})

describe('checkToolOutput', () => {
  const call = (contains: string | string[]) => ({
    tool: 'runCode' as const,
    input: {},
    expect: { contains },
  })
  it('passes matching outputs and flags errors, non-zero exits and missed expectations', () => {
    expect(checkToolOutput({ result: 'west: 4790' }, call('west: 4790'))).toBeUndefined()
    expect(checkToolOutput({ stdout: '{"west": 4790}\n' }, call('"west": 4790'))).toBeUndefined()
    expect(checkToolOutput({ result: 'east' }, call(['east', 'west']))).toBe(
      'expected the output to contain "west"',
    )
    expect(checkToolOutput({ error: "NameError: name 'rows' is not defined" }, undefined)).toBe(
      'the tool reported an error',
    )
    expect(checkToolOutput({ exitCode: 2, stdout: '', stderr: 'x' }, undefined)).toBe(
      'the command exited with 2',
    )
    expect(checkToolOutput({ exitCode: 0, stdout: '' }, undefined)).toBeUndefined()
  })
})
