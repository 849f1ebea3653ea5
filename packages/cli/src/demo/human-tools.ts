// How the human renderer shows a tool call and its result: code and commands shortened, outputs clipped.
import { type Style, truncate } from '../terminal.js'

const maxCodeLines = 8
const maxOutputLines = 8

/** The lines of a tool call: its name and what it runs. */
export function describeToolCall(toolName: string, input: unknown, style: Style): string[] {
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

/** The lines of a tool result, marked ✓ or ✗, with the transcript's problem when it missed. */
export function describeToolResult(
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

/** `text` on one line (newlines shown as ⏎), cut to `max` characters. */
export function oneLine(text: string, max: number): string {
  return truncate(text.replace(/\s*\n\s*/g, ' ⏎ '), max)
}
