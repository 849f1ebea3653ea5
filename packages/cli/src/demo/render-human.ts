import type { ResumeReport } from '@sandkeep/core'
import { formatDuration } from '../args.js'
import { createSpinner, createStyle, formatTable, type Style } from '../terminal.js'
import type { DemoEvent, DemoRenderer, DemoSetup } from './events.js'

/** Options of {@link createHumanRenderer}. */
export interface HumanRendererOptions {
  /** Where to write. */
  stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
  /** ANSI colours. */
  color: boolean
  /** Spinner (only meaningful on a TTY). */
  spinner: boolean
}

const maxCodeLines = 8
const builtInProbes = new Set<string>(['memory', 'filesystem', 'processes'])
const maxOutputLines = 8

/** Renders the demo for people: per turn the chat, the tool calls and a timeline; then a summary table. */
export function createHumanRenderer(options: HumanRendererOptions): DemoRenderer {
  const style = createStyle(options.color)
  const spinner = createSpinner(options.stream as never, style, options.spinner)
  const width = Math.min(Math.max(options.stream.columns ?? 100, 60), 120)
  const print = (text = '') => spinner.print(text)
  let turns = 0
  const failedTools = new Set<number>()
  let streamingTurn = -1
  let streamed = ''

  const flushStreamed = () => {
    if (streamingTurn === -1) return
    streamingTurn = -1
    streamed = ''
  }

  return {
    emit(event: DemoEvent) {
      switch (event.type) {
        case 'demo-start':
          turns = event.transcript.turns
          for (const line of describeSetup(event, style)) print(line)
          break
        case 'idle':
          print('')
          print(
            `${style.magenta('⏸')}  ${style.bold(`${formatDuration(event.scriptedMs)} idle`)} scripted before turn ${event.turn}` +
              style.dim(`  (waited ${formatDuration(event.waitedMs)} for real; the sandbox stays paused)`),
          )
          break
        case 'fault':
          print(`${style.yellow('⚡')}  ${style.yellow(`fault ${event.fault}`)}: ${event.detail}`)
          break
        case 'turn-start':
          print('')
          print(style.bold(rule(`turn ${event.turn}/${turns}`, width)))
          print(`${style.cyan(style.bold('user'))}       ${event.user}`)
          print('')
          break
        case 'tool-call':
          flushStreamed()
          for (const line of describeToolCall(event.toolName, event.input, style)) print(`  ${line}`)
          break
        case 'tool-result':
          if (!event.ok) failedTools.add(event.turn)
          for (const line of describeToolResult(event.output, event.ok, event.problem, style))
            print(`    ${line}`)
          break
        case 'text':
          flushStreamed()
          print('')
          print(`${style.green(style.bold('assistant'))}  ${event.text}`)
          if (failedTools.has(event.turn)) {
            print(style.dim('           (scripted answer: the tool output above does not back it up)'))
          }
          break
        case 'turn-end':
          print('')
          for (const line of describeTurnEnd(event, style)) print(`  ${line}`)
          break
        case 'summary':
          print('')
          print(style.bold(rule('summary', width)))
          for (const line of describeSummary(event, style)) print(line)
          break
        case 'error':
          print(`${style.red('error')}: ${event.message}`)
          break
      }
    },
    progress(text) {
      spinner.set(text)
    },
    textDelta(turn, delta) {
      // Deltas are collected; the whole text is printed once by the `text` event so non-TTY output stays
      // line-based. On a TTY the spinner shows the text arriving.
      if (streamingTurn !== turn) {
        streamingTurn = turn
        streamed = ''
      }
      streamed += delta
      // The newest words are the interesting ones: keep the tail that fits the terminal's width.
      const room = Math.max(10, Math.min(60, (options.stream.columns ?? 80) - 34))
      spinner.set(`assistant is typing: ${streamed.replace(/\s+/g, ' ').slice(-room)}`)
    },
    close() {
      spinner.stop()
    },
  }
}

function rule(title: string, width: number): string {
  const head = `── ${title} `
  return head + '─'.repeat(Math.max(3, width - head.length))
}

function describeSetup(setup: DemoSetup, style: Style): string[] {
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

function describeToolCall(toolName: string, input: unknown, style: Style): string[] {
  const record = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>
  const head = `${style.yellow('▸')} ${style.bold(toolName)}`
  const text = (value: unknown) => (typeof value === 'string' ? value : '')
  switch (toolName) {
    case 'runCode': {
      const lines = text(record.code).split('\n')
      return [
        `${head} ${style.dim(text(record.language) || 'python')}`,
        ...lines.slice(0, maxCodeLines).map((line) => style.dim(`  │ ${line}`)),
        ...(lines.length > maxCodeLines
          ? [style.dim(`  │ … ${lines.length - maxCodeLines} more lines`)]
          : []),
      ]
    }
    case 'runCommand': {
      const command = text(record.command)
      const shown = command.length > 160 ? `${command.slice(0, 157)}…` : command
      return [`${head}${record.background ? style.dim(' (background)') : ''}`, style.dim(`  $ ${shown}`)]
    }
    case 'writeFile': {
      const content = text(record.content)
      return [`${head} ${text(record.path)} ${style.dim(`(${Buffer.byteLength(content)} bytes)`)}`]
    }
    default:
      return [`${head} ${text(record.path) || oneLine(JSON.stringify(input) ?? '', 100)}`]
  }
}

function describeToolResult(
  output: unknown,
  ok: boolean,
  problem: string | undefined,
  style: Style,
): string[] {
  const mark = ok ? style.green('✓') : style.red('✗')
  const lines: string[] = []
  if (typeof output === 'string') {
    lines.push(...clip(output))
  } else if (typeof output === 'object' && output !== null) {
    const record = output as Record<string, unknown>
    const error = record.error
    const notice = record.notice ?? record.note
    if (typeof notice === 'string') lines.push(style.yellow(`notice: ${oneLine(notice, 220)}`))
    const result = record.result ?? record.text
    if (typeof result === 'string' && result) lines.push(`→ ${oneLine(result, 200)}`)
    if (typeof record.path === 'string' && typeof record.bytes === 'number') {
      lines.push(`wrote ${record.path} (${record.bytes} bytes)`)
    }
    if (typeof record.content === 'string') lines.push(...clip(record.content))
    if (Array.isArray(record.entries)) {
      const names = record.entries.map((entry) => String((entry as { path?: unknown }).path ?? entry))
      lines.push(names.slice(0, 8).join('  ') + (names.length > 8 ? `  … ${names.length - 8} more` : ''))
    }
    if (typeof record.stdout === 'string' && record.stdout.trim()) lines.push(...clip(record.stdout))
    if (typeof record.stderr === 'string' && record.stderr.trim())
      lines.push(...clip(record.stderr).map(style.dim))
    if (error) {
      const message =
        typeof error === 'string'
          ? error
          : typeof error === 'object'
            ? [
                (error as Record<string, unknown>).name,
                (error as Record<string, unknown>).value ?? (error as Record<string, unknown>).message,
              ]
                .filter(Boolean)
                .join(': ')
            : String(error)
      lines.push(style.red(oneLine(message, 200)))
    }
    if (typeof record.exitCode === 'number' && record.exitCode !== 0)
      lines.push(style.red(`exit code ${record.exitCode}`))
    if (typeof record.pid === 'number') lines.push(`started, pid ${record.pid}`)
    if (lines.length === 0 && record.exitCode === 0) lines.push(style.dim('exit code 0, no output'))
    if (lines.length === 0) lines.push(style.dim(oneLine(JSON.stringify(output) ?? '', 160)))
  } else {
    lines.push(style.dim(String(output)))
  }
  if (problem) lines.push(style.red(problem))
  return lines.map((line, index) => (index === 0 ? `${mark} ${line}` : `  ${line}`))
}

function clip(text: string): string[] {
  const lines = text.replace(/\n$/, '').split('\n')
  const shown = lines.slice(0, maxOutputLines).map((line) => oneLine(line, 160))
  if (lines.length > maxOutputLines) shown.push(`… ${lines.length - maxOutputLines} more lines`)
  return shown
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s*\n\s*/g, ' ⏎ ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

function ms(value: number): string {
  return `${Math.round(value)} ms`
}

function describeTurnEnd(event: Extract<DemoEvent, { type: 'turn-end' }>, style: Style): string[] {
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
      `${event.end?.action === 'killed' ? 'kill' : 'pause'} ${event.end ? ms(event.end.timings.pauseMs) : '—'}`,
    ]
    lines.push(`${label('timeline')} ${parts.join(style.dim(' → '))}`)
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
  if (event.end?.error)
    lines.push(`${label('end')} ${style.yellow(`${event.end.error.code}: ${event.end.error.message}`)}`)
  if (!event.ok)
    lines.push(
      `${label('result')} ${style.red(`turn ${event.turn} failed${event.error ? `: ${event.error.message}` : ''}`)}`,
    )
  return lines
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

function describeSummary(event: Extract<DemoEvent, { type: 'summary' }>, style: Style): string[] {
  const seconds = (value: number) => value.toFixed(2)
  const rows: string[][] = [
    ['turn', 'sandbox', 'end', 'running s', 'paused s', 'scripted idle', 'repairs'].map((cell) =>
      style.bold(cell),
    ),
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
      turn.outcome ?? '—',
      turn.action ?? '—',
      seconds(turn.runningSeconds),
      turn.turn === 1 ? '—' : seconds(turn.pausedSeconds),
      turn.scriptedIdleSeconds > 0 ? formatDuration(turn.scriptedIdleSeconds * 1000) : '—',
      repairs.length ? repairs.join(', ') : '—',
    ])
  }
  rows.push([style.bold('total'), '', '', style.bold(seconds(running)), style.bold(seconds(paused)), '', ''])
  const lines = formatTable(rows, { right: [3, 4], indent: '  ' }).split('\n')
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
