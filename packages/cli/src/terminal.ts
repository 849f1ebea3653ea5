import type { Writable } from 'node:stream'
import stringWidth from 'string-width'

/** Colour functions; identity functions when colour is off. */
export interface Style {
  bold(text: string): string
  dim(text: string): string
  red(text: string): string
  green(text: string): string
  yellow(text: string): string
  cyan(text: string): string
  magenta(text: string): string
}

/** Whether to colour: only on a TTY, and never with `NO_COLOR` set to anything non-empty. */
export function colorEnabled(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  return stream.isTTY === true && env.TERM !== 'dumb'
}

export function createStyle(enabled: boolean): Style {
  const wrap = (open: number, close: number) => (text: string) =>
    enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text
  return {
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
    magenta: wrap(35, 39),
  }
}

const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

/**
 * A one-line progress spinner for a TTY. Lines printed through `print` clear it first and redraw it after,
 * so output and spinner never interleave. On a non-TTY it does nothing but print.
 */
export interface Spinner {
  /** Shows (or updates) the spinner text; `null` hides it. */
  set(text: string | null): void
  /** Prints lines above the spinner. */
  print(text: string): void
  /** Stops and clears it. */
  stop(): void
}

export function createSpinner(
  stream: Writable & { isTTY?: boolean; columns?: number },
  style: Style,
  active: boolean,
): Spinner {
  let text: string | null = null
  let frame = 0
  let timer: NodeJS.Timeout | undefined
  let started = 0
  const clear = () => {
    if (active && text !== null) stream.write('\r\u001b[2K')
  }
  const draw = () => {
    if (!active || text === null) return
    stream.write(`\r\u001b[2K${spinnerLine(text, Date.now() - started, frame, style, stream.columns)}`)
  }
  return {
    set(next) {
      if (!active) return
      clear()
      if (next !== text) started = Date.now()
      text = next
      if (text === null) {
        if (timer) clearInterval(timer)
        timer = undefined
        return
      }
      draw()
      timer ??= setInterval(() => {
        frame++
        draw()
      }, 80)
      timer.unref()
    },
    print(line) {
      clear()
      stream.write(line.endsWith('\n') ? line : `${line}\n`)
      draw()
    },
    stop() {
      clear()
      text = null
      if (timer) clearInterval(timer)
      timer = undefined
    },
  }
}

/**
 * One spinner line, cut to fit `columns` (default 80) minus one: a line as wide as the terminal wraps on
 * some terminals, and `\r` + erase-line then clears only its last row, leaving the rest behind.
 */
export function spinnerLine(
  text: string,
  elapsedMs: number,
  frame: number,
  style: Style,
  columns: number | undefined,
): string {
  const width = Math.max(20, (columns && columns > 0 ? columns : 80) - 1)
  const seconds = `${(elapsedMs / 1000).toFixed(1)}s`
  // frame, space, text, space, seconds
  const room = width - 2 - seconds.length - 1
  const shown = truncate(text, Math.max(1, room))
  return `${style.cyan(frames[frame % frames.length] ?? '')} ${shown} ${style.dim(seconds)}`
}

/**
 * Columns a string takes in a terminal: ANSI codes count 0, East Asian wide characters and emoji 2, combining
 * marks 0 (string-width's Unicode tables, so CJK and emoji ids line up in tables).
 */
export function visibleLength(text: string): number {
  return stringWidth(text)
}

/** Renders rows as an aligned table; the first row is the header. `right` lists right-aligned columns. */
export function formatTable(rows: string[][], options: { right?: number[]; indent?: string } = {}): string {
  const widths: number[] = []
  for (const row of rows) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, visibleLength(cell))
    })
  }
  const right = new Set(options.right ?? [])
  return rows
    .map(
      (row) =>
        (options.indent ?? '') +
        row
          .map((cell, index) => {
            const pad = ' '.repeat((widths[index] ?? 0) - visibleLength(cell))
            return right.has(index) ? pad + cell : index === row.length - 1 ? cell : cell + pad
          })
          .join('  '),
    )
    .join('\n')
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' })

/**
 * `text` cut to at most `max` terminal columns, the last one an ellipsis when cut. Cuts between graphemes, so
 * an emoji sequence or a letter with its accent is kept whole or dropped whole. For plain text without ANSI codes.
 */
export function truncate(text: string, max: number): string {
  if (visibleLength(text) <= max) return text
  let shown = ''
  let width = 0
  for (const { segment } of graphemes.segment(text)) {
    const next = visibleLength(segment)
    if (width + next > max - 1) break
    shown += segment
    width += next
  }
  return `${shown}…`
}
