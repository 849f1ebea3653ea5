// How the human renderer shows the setup, the end of each turn (timeline, what survived, repairs) and the
// summary table.
import type { RestoreReport, ResumeReport, TurnEndReport } from '@sandkeep/core'
import { formatDuration } from '../args.js'
import { formatTable, type Style } from '../terminal.js'
import type { DemoEvent, DemoSetup } from './events.js'
import { oneLine } from './human-tools.js'

const builtInProbes = new Set<string>(['memory', 'filesystem', 'processes'])

/** The lines of `demo-start`: where the demo runs. */
export function describeSetup(setup: DemoSetup, style: Style): string[] {
  const lines = [
    `${style.bold('sandkeep demo')}  ${setup.transcript.title} ${style.dim(`(${setup.transcript.file}, ${setup.transcript.turns} turns)`)}`,
  ]
  const provider =
    setup.provider.kind === 'local-e2b'
      ? `local-e2b in this process at ${setup.provider.apiUrl} (pause mode ${style.bold(setup.provider.pauseMode)}, isolation ${setup.provider.isolation}), through @sandkeep/e2b`
      : `E2B at ${setup.provider.apiUrl} through @sandkeep/e2b (--provider e2b)`
  const store =
    setup.store.kind === 'memory'
      ? `memory ${style.dim('(set REDIS_URL to keep sessions in Redis)')}`
      : `redis ${setup.store.url} ${style.dim(`(prefix ${setup.store.prefix})`)}`
  lines.push(`  sandboxes     ${provider}`)
  lines.push(`  sessions      ${store}`)
  lines.push(`  conversation  ${setup.conversationId} ${style.dim(`(tenant ${setup.tenant})`)}`)
  lines.push(
    `  fault         ${setup.fault ? `${style.yellow(setup.fault.name)} before turn ${setup.fault.turn}` : style.dim('none (try --fault host-restart)')}`,
  )
  lines.push(
    `  model         scripted (MockLanguageModelV4 from ai/test) through streamText and the sandkeep tools`,
  )
  return lines
}

function ms(value: number): string {
  return `${Math.round(value)} ms`
}

/** The lines of `turn-end`: timeline, what survived, repairs, failure. */
export function describeTurnEnd(event: Extract<DemoEvent, { type: 'turn-end' }>, style: Style): string[] {
  const lines: string[] = []
  const label = (name: string) => style.dim(name.padEnd(10))
  const report = event.report
  if (report) {
    const t = report.timings
    const parts = [
      `store ${ms(t.storeMs + (event.end?.timings.storeMs ?? 0))}`,
      `resume ${ms(t.connectMs)} ${style.dim(`(${report.outcome})`)}`,
      `health ${ms(t.healthMs)}`,
      ...(t.rehydrateMs >= 0.5 ? [`rehydrate ${ms(t.rehydrateMs)}`] : []),
      `work ${event.end ? ms(event.end.timings.workMs) : '—'}`,
      ...(event.end?.checkpoint ? [`checkpoint ${ms(event.end.timings.checkpointMs ?? 0)}`] : []),
      `${event.end?.action === 'killed' ? 'kill' : 'pause'} ${event.end ? ms(event.end.timings.pauseMs) : '—'}`,
    ]
    lines.push(`${label('timeline')} ${parts.join(style.dim(' → '))}`)
    if (report.restored) lines.push(`${label('restored')} ${describeRestored(report.restored, style)}`)
    lines.push(`${label('survived')} ${describeSurvived(report, style)}`)
    // The built-in fidelity probes are already summed up on the `survived` line (and their loss by the
    // rehydration below); this line is about the declared checks.
    const repairs = report.checks.filter(
      (check) => !builtInProbes.has(check.kind) && (check.status === 'repaired' || check.status === 'failed'),
    )
    const repairText = repairs.map((check) =>
      check.status === 'repaired'
        ? `${style.yellow('repaired')} ${check.name}${check.message ? style.dim(` (${oneLine(check.message, 100)})`) : ''}`
        : `${style.red('failed')} ${check.name}${check.message ? style.dim(` (${oneLine(check.message, 100)})`) : ''}`,
    )
    if (event.rehydrate && event.rehydrate.steps > 0) {
      repairText.push(
        `${style.yellow('rehydrated')} ${event.rehydrate.steps} journal step${event.rehydrate.steps === 1 ? '' : 's'} ${style.dim(`(${event.rehydrate.reason}, ${ms(event.rehydrate.ms)})`)}`,
      )
    }
    if (report.retries > 0)
      repairText.push(
        `${style.yellow('retried')} ${report.retries} transient provider failure${report.retries === 1 ? '' : 's'}`,
      )
    lines.push(
      `${label('repairs')} ${repairText.length ? repairText.join(style.dim(' · ')) : style.dim('none needed')}`,
    )
    if (report.previousSandboxId) {
      lines.push(`${label('sandbox')} ${report.previousSandboxId} → ${report.sandboxId}`)
    }
    if (report.stateLost)
      lines.push(`${label('')} ${style.yellow('earlier sandbox state was lost; the model was told')}`)
  }
  const checkpoint = event.end?.checkpoint
  if (checkpoint) lines.push(`${label('checkpoint')} ${describeCheckpoint(checkpoint, style)}`)
  if (event.end?.error)
    lines.push(`${label('end')} ${style.yellow(`${event.end.error.code}: ${event.end.error.message}`)}`)
  if (!event.ok)
    lines.push(
      `${label('result')} ${style.red(`turn ${event.turn} failed${event.error ? `: ${event.error.message}` : ''}`)}`,
    )
  return lines
}

/** Which checkpoint a rewound or forked turn started from: `rewound from turn 1 (snapshot)`. */
export function describeRestored(restored: RestoreReport, style: Style): string {
  const from =
    restored.kind === 'forked'
      ? `forked from ${restored.fromConversationId ?? 'another conversation'} turn ${restored.turn}`
      : `rewound from turn ${restored.turn}`
  const source = restored.snapshotLost
    ? style.yellow('journal: the snapshot was gone, rebuilt from the journal')
    : restored.source
  return `${from} (${source})`
}

/** The checkpoint a turn end took: its turn, and its snapshot or the journal's length alone. */
function describeCheckpoint(checkpoint: NonNullable<TurnEndReport['checkpoint']>, style: Style): string {
  const steps = `journal ${checkpoint.journalLength} step${checkpoint.journalLength === 1 ? '' : 's'}`
  const kept = checkpoint.snapshot
    ? `snapshot ${checkpoint.snapshot.snapshotId}`
    : style.dim('journal only (no snapshot)')
  return `turn ${checkpoint.turn}: ${kept}, ${steps}`
}

/** The lines of `branch`: the rewind or fork done before a turn. */
export function describeBranch(event: Extract<DemoEvent, { type: 'branch' }>, style: Style): string[] {
  const source = event.source === 'snapshot' ? 'its snapshot' : 'a fresh sandbox and the journal'
  if (event.kind === 'fork') {
    return [
      `${style.magenta('⑂')}  ${style.bold('fork')}: ${event.conversationId} starts from ${event.fromConversationId} turn ${event.checkpointTurn} ${style.dim(`(its first turn restores ${source}; the source is not touched)`)}`,
    ]
  }
  if (event.kind === 'switch') {
    const killed = event.killedSandboxId ? `killed ${event.killedSandboxId}; ` : ''
    return [
      `${style.magenta('⤺')}  ${style.bold('switch')}: ${event.conversationId} back to the answer of turn ${event.toAnswerOf} (checkpoint ${event.checkpointId}, turn ${event.checkpointTurn} of its branch) ${style.dim(`(${killed}nothing deleted; the next turn restores ${source})`)}`,
    ]
  }
  const dropped = event.droppedTurns?.length
    ? `dropped turn${event.droppedTurns.length === 1 ? '' : 's'} ${event.droppedTurns.join(', ')}`
    : 'nothing deleted, the later turns stay restorable on their branch'
  const killed = event.killedSandboxId ? `, killed ${event.killedSandboxId}` : ''
  return [
    `${style.magenta('↺')}  ${style.bold(event.kind)}: ${event.conversationId} rewound to the end of turn ${event.checkpointTurn} ${style.dim(`(${dropped}${killed}; the next turn restores ${source})`)}`,
  ]
}

function describeSurvived(report: ResumeReport, style: Style): string {
  if (report.outcome === 'created') return style.dim('new sandbox: nothing to carry over yet')
  const show = (name: string, value: boolean | null) =>
    value === true
      ? `${name} ${style.green('kept')}`
      : value === false
        ? `${name} ${style.red('lost')}`
        : `${name} ${style.dim('n/a')}`
  return [
    show('memory', report.survived.memory),
    show('files', report.survived.filesystem),
    show('processes', report.survived.processes),
  ].join(style.dim(' · '))
}

/** The lines of `summary`: the per-turn table and the verdict. */
export function describeSummary(event: Extract<DemoEvent, { type: 'summary' }>, style: Style): string[] {
  const seconds = (value: number) => value.toFixed(2)
  // A replay that branches says which conversation and turn of it each row is, and where it started from.
  const branched = event.turns.some((turn) => turn.restored !== null || turn.conversation !== 'main')
  const chat = (turn: (typeof event.turns)[number]) =>
    branched
      ? [`${turn.conversation} ${turn.chatTurn}${turn.restored ? ` ← ${turn.restored.turn}` : ''}`]
      : []
  const rows: string[][] = [
    [
      'turn',
      ...(branched ? ['chat'] : []),
      'sandbox',
      'end',
      'running s',
      'paused s',
      'scripted idle',
      'repairs',
    ].map((cell) => style.bold(cell)),
  ]
  let running = 0
  let paused = 0
  for (const turn of event.turns) {
    running += turn.runningSeconds
    paused += turn.pausedSeconds
    const repairs = [
      ...turn.repairs,
      ...(turn.rehydratedSteps > 0 ? [`rehydrated ${turn.rehydratedSteps}`] : []),
      ...(turn.stateLost ? ['state lost'] : []),
    ]
    rows.push([
      turn.ok ? String(turn.turn) : style.red(`${turn.turn} ✗`),
      ...chat(turn),
      turn.outcome ?? '—',
      turn.action ?? '—',
      seconds(turn.runningSeconds),
      turn.turn === 1 ? '—' : seconds(turn.pausedSeconds),
      turn.scriptedIdleSeconds > 0 ? formatDuration(turn.scriptedIdleSeconds * 1000) : '—',
      repairs.length ? repairs.join(', ') : '—',
    ])
  }
  const pad = branched ? [''] : []
  rows.push([
    style.bold('total'),
    ...pad,
    '',
    '',
    style.bold(seconds(running)),
    style.bold(seconds(paused)),
    '',
    '',
  ])
  const shift = pad.length
  const lines = formatTable(rows, { right: [3 + shift, 4 + shift], indent: '  ' }).split('\n')
  lines.push('')
  const passed = event.turns.filter((turn) => turn.ok).length
  if (event.ok) {
    lines.push(
      `${style.green('✓')} ${passed}/${event.turns.length} turns passed; the sandbox ran ${seconds(running)} s and sat paused between turns.`,
    )
  } else if (event.interrupted) {
    lines.push(
      `${style.yellow('■')} interrupted at turn ${event.failedTurn} (${passed} turns passed); the session was still cleaned up.`,
    )
  } else {
    lines.push(
      `${style.red('✗')} turn ${event.failedTurn} failed (${passed}/${event.turns.length} turns passed).`,
    )
  }
  return lines
}
