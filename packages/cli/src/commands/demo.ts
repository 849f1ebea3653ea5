import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import type { z } from 'zod'
import { durationOption, flagOption, integerOption, stringOption, UsageError } from '../args.js'
import { type Command, ExitCode } from '../command.js'
import { e2bFromEnv, storeConfig } from '../config.js'
import {
  FAULT_NAMES,
  type FaultName,
  ISOLATIONS,
  type Isolation,
  PAUSE_MODES,
  type PauseMode,
} from '../demo/events.js'
import { colorEnabled } from '../terminal.js'
import {
  formatPath,
  loadTranscript,
  plainIssueMessage,
  resolveTranscriptPath,
  type Transcript,
  TranscriptError,
  turnProblemLine,
  valueAt,
} from '../transcript.js'

/** Default real wait for a scripted idle. */
const DEFAULT_IDLE_MS = 1500

/**
 * The turn a fault is injected before, when `--fault-turn` is not given: the turn whose state the fault
 * threatens most visibly in the default transcript (the memory of turn 1 is used by turn 2; the server of
 * turn 3 is queried by turn 4; the long idle is before the last turn).
 */
export function defaultFaultTurn(fault: FaultName, transcript: Transcript): number {
  const last = transcript.turns.length
  const longestIdle = [...transcript.turns].sort((a, b) => b.idleBeforeMs - a.idleBeforeMs)[0]
  const preferred: Record<FaultName, number> = {
    'expire-retention': longestIdle && longestIdle.idleBeforeMs > 0 ? longestIdle.index : last,
    'host-restart': 4,
    'kill-server': 4,
    'drop-memory': 2,
    'connect-5xx': 2,
    'id-change': 3,
  }
  return Math.max(2, Math.min(preferred[fault], last))
}

/** `sandkeep demo` */
export const demoCommand: Command = {
  spec: {
    name: 'demo',
    summary: 'Replay a multi-turn chat through the AI SDK loop and show what survives each pause.',
    description: `Replays a transcript (a scripted model's tool calls and answers) through the real AI SDK loop: streamText
with a MockLanguageModelV4 and the sandkeep tools, one sandkeep turn per user message. The sandbox is
resumed at the first tool call of a turn and paused when the turn ends. For each turn it shows the chat,
the tool calls and their outputs, a timeline (store, resume, health, work, pause in ms), what survived
the pause and which repairs ran; then a summary of running vs paused seconds.

Runs on embedded defaults: an in-process local-e2b host and the memory store. REDIS_URL switches the store
to Redis; --provider e2b with E2B_API_KEY uses an E2B platform (E2B_API_URL / E2B_SANDBOX_URL for a
compatible host such as "sandkeep host").`,
    options: {
      transcript: {
        type: 'string',
        valueName: '<file>',
        description: 'Transcript JSON file, or the name of a shipped one.',
        defaultText: 'data-analysis',
      },
      'pause-mode': {
        type: 'string',
        valueName: '<mode>',
        choices: PAUSE_MODES,
        description: 'What a pause keeps on the local host.',
        defaultText: 'memory',
      },
      isolation: {
        type: 'string',
        valueName: '<mode>',
        choices: ISOLATIONS,
        description:
          'How the embedded local host isolates sandboxes: auto needs bubblewrap; none runs them unisolated (warns).',
        defaultText: 'auto',
      },
      fault: {
        type: 'string',
        valueName: '<name>',
        choices: FAULT_NAMES,
        description: 'Inject a fault into the local host before a turn and watch the recovery.',
      },
      'fault-turn': {
        type: 'string',
        valueName: '<n>',
        description: 'The turn the fault is injected before (2 or later).',
        defaultText:
          'per fault: drop-memory/connect-5xx 2, id-change 3, host-restart/kill-server 4, expire-retention the long idle',
      },
      provider: {
        type: 'string',
        valueName: '<kind>',
        choices: ['local', 'e2b'],
        description: 'local: an in-process local-e2b host; e2b: E2B (needs E2B_API_KEY).',
        defaultText: 'local',
      },
      idle: {
        type: 'string',
        valueName: '<duration>',
        description: 'Real wait for each scripted idle (the transcript says 2h; nobody waits 2h).',
        defaultText: '1500ms',
      },
      json: {
        type: 'boolean',
        description: 'One JSON object per line (turn-start, tool-call, tool-result, turn-end, summary, ...).',
      },
      conversation: {
        type: 'string',
        valueName: '<id>',
        description: 'Conversation id.',
        defaultText: 'demo-<random>',
      },
      tenant: { type: 'string', valueName: '<tenant>', description: 'Tenant.', defaultText: 'default' },
      'keep-session': {
        type: 'boolean',
        description:
          'Leave the session and its paused sandbox at the end (for sandkeep sessions) instead of ending it.',
      },
      'keep-going': { type: 'boolean', description: 'Run the remaining turns after a failed one.' },
      'state-dir': {
        type: 'string',
        valueName: '<dir>',
        description: "The local host's state directory.",
        defaultText: 'a temporary directory, removed at the end',
      },
    },
    sections: [
      {
        title: 'Environment',
        text: `REDIS_URL              keep sessions in Redis instead of memory (SANDKEEP_REDIS_PREFIX: key prefix)
E2B_API_KEY            with --provider e2b: the platform's key (E2B_API_URL, E2B_SANDBOX_URL, E2B_DOMAIN)
NO_COLOR               no ANSI colours (also off when stdout is not a terminal)`,
      },
      {
        title: 'Exit codes',
        text: '0 every turn passed, 1 a turn failed, 2 bad flags, an invalid transcript or an unreachable store, 130 interrupted',
      },
    ],
    examples: [
      'sandkeep demo',
      'sandkeep demo --pause-mode filesystem',
      'sandkeep demo --fault host-restart',
      'sandkeep demo --json | jq -c \'select(.type == "turn-end") | {turn, outcome: .report.outcome}\'',
    ],
  },
  async run(args, context) {
    const pauseModeFlag = stringOption(args, 'pause-mode') as PauseMode | undefined
    const fault = stringOption(args, 'fault') as FaultName | undefined
    const providerKind = (stringOption(args, 'provider') ?? 'local') as 'local' | 'e2b'
    const idleMs = durationOption(args, 'demo', 'idle', { min: 0, max: 600_000 }) ?? DEFAULT_IDLE_MS
    const json = flagOption(args, 'json')
    const faultTurnFlag = integerOption(args, 'demo', 'fault-turn', { min: 2, max: 100 })
    if (faultTurnFlag !== undefined && fault === undefined)
      throw new UsageError('demo', '--fault-turn needs --fault')
    const stateDir = stringOption(args, 'state-dir')
    const isolation = stringOption(args, 'isolation') as Isolation | undefined

    let connection = null
    if (providerKind === 'e2b') {
      connection = e2bFromEnv(context.env)
      if (!connection) throw new UsageError('demo', '--provider e2b needs E2B_API_KEY in the environment')
      if (fault) throw new UsageError('demo', '--fault needs the embedded local host (drop --provider e2b)')
      if (pauseModeFlag) throw new UsageError('demo', '--pause-mode applies to the embedded local host only')
      if (stateDir) throw new UsageError('demo', '--state-dir applies to the embedded local host only')
      if (isolation) throw new UsageError('demo', '--isolation applies to the embedded local host only')
    }

    const { validateConversationId, validateTenant } = await import('@sandkeep/core')
    const conversationId = stringOption(args, 'conversation') ?? `demo-${randomBytes(4).toString('hex')}`
    const tenant = stringOption(args, 'tenant')
    try {
      validateConversationId(conversationId)
      validateTenant(tenant)
    } catch (error) {
      throw new UsageError('demo', error instanceof Error ? error.message : String(error))
    }

    const transcript = await loadTranscript(resolveTranscriptPath(stringOption(args, 'transcript')))
    await checkToolInputs(transcript)
    const faultTurn = fault ? (faultTurnFlag ?? defaultFaultTurn(fault, transcript)) : undefined
    if (faultTurn !== undefined && faultTurn > transcript.turns.length) {
      throw new UsageError(
        'demo',
        `--fault-turn ${faultTurn} is past the last turn (${transcript.turns.length})`,
      )
    }

    // Loaded only now: a usage error should not pay for loading the AI SDK and the E2B SDK.
    const [{ createHumanRenderer }, { createJsonRenderer }, { runDemo }] = await Promise.all([
      import('../demo/render-human.js'),
      import('../demo/render-json.js'),
      import('../demo/run-demo.js'),
    ])
    const color = colorEnabled(context.stdout, context.env)
    const renderer = json
      ? createJsonRenderer(context.stdout)
      : createHumanRenderer({
          stream: context.stdout,
          color,
          // The spinner redraws with erase-line codes: with NO_COLOR (or TERM=dumb) the output has no escape
          // codes at all, as the README promises, so there is no spinner either.
          spinner: context.stdout.isTTY === true && color,
        })
    try {
      const result = await runDemo({
        transcript,
        provider:
          providerKind === 'e2b' && connection
            ? { kind: 'e2b', connection }
            : {
                kind: 'local',
                pauseMode: pauseModeFlag ?? 'memory',
                ...(stateDir ? { stateDir: resolve(stateDir) } : {}),
                ...(isolation ? { isolation } : {}),
              },
        store: storeConfig(context.env, {}),
        fault: fault && faultTurn !== undefined ? { name: fault, turn: faultTurn } : null,
        idleMs,
        conversationId,
        tenant: validateTenant(tenant),
        keepSession: flagOption(args, 'keep-session'),
        keepGoing: flagOption(args, 'keep-going'),
        renderer,
        signal: context.signal,
      })
      if (context.signal.aborted) return ExitCode.INTERRUPTED
      return result.ok ? ExitCode.OK : ExitCode.FAILURE
    } finally {
      renderer.close()
    }
  },
}

/**
 * Checks every scripted tool input against the tool's own input schema before anything starts, so a typo in
 * a transcript is reported with its turn and field instead of as a failed tool call halfway through. Every
 * problem of every call is reported, each with its JSON path and in plain words.
 */
export async function checkToolInputs(transcript: Transcript): Promise<void> {
  const { sandboxTools } = await import('@sandkeep/ai-sdk')
  const { asSchema } = await import('ai')
  const tools = sandboxTools() as unknown as Record<string, { inputSchema: Parameters<typeof asSchema>[0] }>
  const problems: string[] = []
  for (const turn of transcript.turns) {
    for (const [index, call] of turn.toolCalls.entries()) {
      const tool = tools[call.tool]
      if (!tool) {
        problems.push(
          turnProblemLine(transcript, turn.index, `toolCalls[${index}].tool`, `no tool named ${call.tool}`),
        )
        continue
      }
      const result = await asSchema(tool.inputSchema).validate?.(call.input)
      if (!result || result.success) continue
      const issues = (result.error as { issues?: Array<z.core.$ZodIssue> }).issues ?? []
      if (issues.length === 0) {
        problems.push(
          turnProblemLine(transcript, turn.index, `toolCalls[${index}].input`, result.error.message),
        )
      }
      for (const issue of issues) {
        const path = formatPath(issue.path)
        const field = `toolCalls[${index}].input${path ? (path.startsWith('[') ? path : `.${path}`) : ''}`
        problems.push(
          turnProblemLine(
            transcript,
            turn.index,
            field,
            plainIssueMessage(issue, valueAt(call.input, issue.path)),
          ),
        )
      }
    }
  }
  if (problems.length > 0) throw new TranscriptError(transcript.file, problems)
}
