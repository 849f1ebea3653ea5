// The demo for people: per turn the chat, the tool calls and a timeline; then a summary table. The lines of
// each event come from human-tools.ts (tool calls and results) and human-turns.ts (setup, turn end, summary).
import { formatDuration } from '../args.js'
import { createSpinner, createStyle, type Style } from '../terminal.js'
import type { DemoEvent, DemoRenderer } from './events.js'
import { describeToolCall, describeToolResult } from './human-tools.js'
import { describeBranch, describeSetup, describeSummary, describeTurnEnd } from './human-turns.js'

/** Options of {@link createHumanRenderer}. */
export interface HumanRendererOptions {
  /** Where to write. */
  stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
  /** ANSI colours. */
  color: boolean
  /** Spinner (only meaningful on a TTY). */
  spinner: boolean
}

/** What the renderer remembers across events. */
interface RenderState {
  /** The transcript's number of turns. */
  turns: number
  /** Turns with a failed tool result. */
  failedTools: Set<number>
}

/** Renders the demo for people: per turn the chat, the tool calls and a timeline; then a summary table. */
export function createHumanRenderer(options: HumanRendererOptions): DemoRenderer {
  const style = createStyle(options.color)
  const spinner = createSpinner(options.stream as never, style, options.spinner)
  const width = Math.min(Math.max(options.stream.columns ?? 100, 60), 120)
  const state: RenderState = { turns: 0, failedTools: new Set() }
  let streamingTurn = -1
  let streamed = ''

  return {
    emit(event: DemoEvent) {
      // A tool call or the final text ends the answer the spinner was showing as it arrived.
      if (event.type === 'tool-call' || event.type === 'text') {
        streamingTurn = -1
        streamed = ''
      }
      for (const line of describeEvent(event, state, style, width)) spinner.print(line)
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

/** The lines one event prints (an empty string is an empty line). */
function describeEvent(event: DemoEvent, state: RenderState, style: Style, width: number): string[] {
  switch (event.type) {
    case 'demo-start':
      state.turns = event.transcript.turns
      return describeSetup(event, style)
    case 'idle':
      return [
        '',
        `${style.magenta('⏸')}  ${style.bold(`${formatDuration(event.scriptedMs)} idle`)} scripted before turn ${event.turn}` +
          style.dim(`  (waited ${formatDuration(event.waitedMs)} for real; the sandbox stays paused)`),
      ]
    case 'fault':
      return [`${style.yellow('⚡')}  ${style.yellow(`fault ${event.fault}`)}: ${event.detail}`]
    case 'branch':
      return ['', ...describeBranch(event, style)]
    case 'turn-start':
      return [
        '',
        style.bold(rule(`turn ${event.turn}/${state.turns}${chatPlace(event)}`, width)),
        `${style.cyan(style.bold('user'))}       ${event.user}`,
        '',
      ]
    case 'tool-call':
      return describeToolCall(event.toolName, event.input, style).map((line) => `  ${line}`)
    case 'tool-result':
      if (!event.ok) state.failedTools.add(event.turn)
      return describeToolResult(event.output, event.ok, event.problem, style).map((line) => `    ${line}`)
    case 'text':
      return [
        '',
        `${style.green(style.bold('assistant'))}  ${event.text}`,
        ...(state.failedTools.has(event.turn)
          ? [style.dim('           (scripted answer: the tool output above does not back it up)')]
          : []),
      ]
    case 'turn-end':
      return ['', ...describeTurnEnd(event, style).map((line) => `  ${line}`)]
    case 'summary':
      return ['', style.bold(rule('summary', width)), ...describeSummary(event, style)]
    case 'error':
      return [`${style.red('error')}: ${event.message}`]
  }
}

/** Where a turn of a branching replay is: its conversation and its number there, when they differ. */
function chatPlace(event: Extract<DemoEvent, { type: 'turn-start' }>): string {
  const { conversation, chatTurn } = event
  if (conversation === undefined || chatTurn === undefined) return ''
  if (conversation === 'main' && chatTurn === event.turn) return ''
  return ` · ${conversation} turn ${chatTurn}`
}

function rule(title: string, width: number): string {
  const head = `── ${title} `
  return head + '─'.repeat(Math.max(3, width - head.length))
}
