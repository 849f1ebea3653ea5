import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import {
  durationOption,
  flagOption,
  integerOption,
  type ParsedArgs,
  stringOption,
  UsageError,
  usageErrorFrom,
} from '../args.js'
import { type Command, type CommandContext, ExitCode } from '../command.js'
import { type E2BConnection, e2bFromEnv, storeConfig } from '../config.js'
import { FAULT_NAMES, type FaultName, type Isolation, type PauseMode } from '../demo/events.js'
import type { RunDemoOptions } from '../demo/options.js'
import { isolationOption, pauseModeOption } from '../local-host-options.js'
import { colorEnabled } from '../terminal.js'
import { loadTranscript, resolveTranscriptPath, type Transcript } from '../transcript.js'
import { checkToolInputs } from '../transcript-tool-inputs.js'

/** Default real wait for a scripted idle. */
const DEFAULT_IDLE_MS = 1500

/**
 * The turn a fault is injected before, when `--fault-turn` is not given: the turn whose state the fault
 * threatens most visibly in the default transcript (the memory of turn 1 is used by turn 2; the server of
 * turn 3 is queried by turn 4; the long idle is before the last turn).
 */
function defaultFaultTurn(fault: FaultName, transcript: Transcript): number {
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
resumed as a turn starts when the turn before used it (from turn 2 on), at the model's first tool call otherwise (turn 1), and paused when the turn ends. For each turn it shows the chat,
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
      'pause-mode': pauseModeOption('What a pause keeps on the local host.'),
      isolation: isolationOption('the embedded local host'),
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
    const flags = await readFlags(args, context)
    const transcript = await loadTranscript(resolveTranscriptPath(stringOption(args, 'transcript')))
    await checkToolInputs(transcript)
    const fault = scheduleFault(flags, transcript)

    // Loaded only now: a usage error should not pay for loading the AI SDK and the E2B SDK.
    const [{ createHumanRenderer }, { createJsonRenderer }, { runDemo }] = await Promise.all([
      import('../demo/render-human.js'),
      import('../demo/render-json.js'),
      import('../demo/run-demo.js'),
    ])
    const color = colorEnabled(context.stdout, context.env)
    const renderer = flags.json
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
        provider: providerOf(flags),
        store: storeConfig(context.env, {}),
        fault,
        idleMs: flags.idleMs,
        conversationId: flags.conversationId,
        tenant: flags.tenant,
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

/** The flags of `sandkeep demo`, checked against each other before the transcript is read. */
interface DemoFlags {
  pauseMode: PauseMode | undefined
  fault: FaultName | undefined
  faultTurn: number | undefined
  /** Set with `--provider e2b`. */
  connection: E2BConnection | null
  idleMs: number
  json: boolean
  stateDir: string | undefined
  isolation: Isolation | undefined
  conversationId: string
  tenant: string
}

async function readFlags(args: ParsedArgs, context: CommandContext): Promise<DemoFlags> {
  const pauseMode = stringOption(args, 'pause-mode') as PauseMode | undefined
  const fault = stringOption(args, 'fault') as FaultName | undefined
  const providerKind = (stringOption(args, 'provider') ?? 'local') as 'local' | 'e2b'
  const idleMs = durationOption(args, 'demo', 'idle', { min: 0, max: 600_000 }) ?? DEFAULT_IDLE_MS
  const json = flagOption(args, 'json')
  const faultTurn = integerOption(args, 'demo', 'fault-turn', { min: 2, max: 100 })
  if (faultTurn !== undefined && fault === undefined)
    throw new UsageError('demo', '--fault-turn needs --fault')
  const stateDir = stringOption(args, 'state-dir')
  const isolation = stringOption(args, 'isolation') as Isolation | undefined

  let connection = null
  if (providerKind === 'e2b') {
    connection = e2bFromEnv(context.env)
    if (!connection) throw new UsageError('demo', '--provider e2b needs E2B_API_KEY in the environment')
    if (fault) throw new UsageError('demo', '--fault needs the embedded local host (drop --provider e2b)')
    if (pauseMode) throw new UsageError('demo', '--pause-mode applies to the embedded local host only')
    if (stateDir) throw new UsageError('demo', '--state-dir applies to the embedded local host only')
    if (isolation) throw new UsageError('demo', '--isolation applies to the embedded local host only')
  }

  const { validateConversationId, validateTenant } = await import('@sandkeep/core')
  const conversationId = stringOption(args, 'conversation') ?? `demo-${randomBytes(4).toString('hex')}`
  const tenant = usageErrorFrom('demo', () => {
    validateConversationId(conversationId)
    return validateTenant(stringOption(args, 'tenant'))
  })
  return {
    pauseMode,
    fault,
    faultTurn,
    connection,
    idleMs,
    json,
    stateDir,
    isolation,
    conversationId,
    tenant,
  }
}

/** `--fault` with its turn (`--fault-turn` or the fault's default), which must be one of the transcript's. */
function scheduleFault(flags: DemoFlags, transcript: Transcript): RunDemoOptions['fault'] {
  if (!flags.fault) return null
  const turn = flags.faultTurn ?? defaultFaultTurn(flags.fault, transcript)
  if (turn > transcript.turns.length) {
    throw new UsageError('demo', `--fault-turn ${turn} is past the last turn (${transcript.turns.length})`)
  }
  return { name: flags.fault, turn }
}

function providerOf(flags: DemoFlags): RunDemoOptions['provider'] {
  if (flags.connection) return { kind: 'e2b', connection: flags.connection }
  return {
    kind: 'local',
    pauseMode: flags.pauseMode ?? 'memory',
    ...(flags.stateDir ? { stateDir: resolve(flags.stateDir) } : {}),
    ...(flags.isolation ? { isolation: flags.isolation } : {}),
  }
}
