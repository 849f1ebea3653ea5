import type { SessionKey, SessionManager, SessionRecord, SessionStore } from '@sandkeep/core'
import {
  type CommandSpec,
  flagOption,
  integerOption,
  type OptionSpec,
  type ParsedArgs,
  stringOption,
  UsageError,
} from '../args.js'
import { type Command, type CommandContext, ExitCode } from '../command.js'
import { e2bFromEnv, openE2BProvider, openStore, redactUrl, storeConfig } from '../config.js'
import { colorEnabled, createStyle, formatTable } from '../terminal.js'

const commonOptions: Record<string, OptionSpec> = {
  tenant: {
    type: 'string',
    valueName: '<tenant>',
    description: 'Tenant whose sessions to use.',
    defaultText: 'default',
  },
  json: { type: 'boolean', description: 'Print JSON instead of a table.' },
  redis: { type: 'string', valueName: '<url>', description: 'Redis URL.', defaultText: '$REDIS_URL' },
  prefix: {
    type: 'string',
    valueName: '<prefix>',
    description: 'Key prefix of the Redis store.',
    defaultText: '$SANDKEEP_REDIS_PREFIX or sandkeep',
  },
}

const environment = {
  title: 'Environment',
  text: `REDIS_URL              the session store (sessions live in Redis; the memory store holds nothing between runs)
SANDKEEP_REDIS_PREFIX  key prefix (default sandkeep)
E2B_API_KEY            the sandbox platform, for end and gc (with E2B_API_URL / E2B_SANDBOX_URL for a local host)`,
}

function spec(name: string, summary: string, extra: Partial<CommandSpec> = {}): CommandSpec {
  return {
    name: `sessions ${name}`,
    summary,
    options: { ...commonOptions, ...(extra.options ?? {}) },
    sections: [environment],
    ...omit(extra, 'options'),
  }
}

function omit<T extends object, K extends keyof T>(value: T, key: K): Omit<T, K> {
  const { [key]: _, ...rest } = value
  return rest
}

async function openSessionStore(
  args: ParsedArgs,
  context: CommandContext,
  command: string,
): Promise<SessionStore> {
  const config = storeConfig(context.env, {
    redis: stringOption(args, 'redis'),
    prefix: stringOption(args, 'prefix'),
  })
  if (config.kind === 'memory') {
    throw new UsageError(
      command,
      'no session store: set REDIS_URL (or pass --redis); the in-memory store of a demo run is gone when it exits',
    )
  }
  try {
    new URL(config.url)
  } catch {
    throw new UsageError(command, `the Redis URL ${JSON.stringify(redactUrl(config.url))} is not a URL`)
  }
  return openStore(config)
}

async function openManager(
  store: SessionStore,
  context: CommandContext,
  command: string,
): Promise<SessionManager> {
  const connection = e2bFromEnv(context.env)
  if (!connection) {
    throw new UsageError(
      command,
      'no sandbox platform: set E2B_API_KEY (and E2B_API_URL / E2B_SANDBOX_URL for a local host; see sandkeep host)',
    )
  }
  const { createSessionManager } = await import('@sandkeep/core')
  return createSessionManager({ store, provider: await openE2BProvider(connection) })
}

/** The session key from the positional id and `--tenant`; a bad one is a usage error, found before any I/O. */
async function sessionKeyOf(args: ParsedArgs, command: string): Promise<SessionKey> {
  const { validateSessionKey } = await import('@sandkeep/core')
  try {
    return validateSessionKey(args.positionals[0], tenantOf(args))
  } catch (error) {
    throw new UsageError(command, error instanceof Error ? error.message : String(error))
  }
}

async function tenantFrom(args: ParsedArgs, command: string): Promise<string> {
  const { validateTenant } = await import('@sandkeep/core')
  try {
    return validateTenant(tenantOf(args))
  } catch (error) {
    throw new UsageError(command, error instanceof Error ? error.message : String(error))
  }
}

function tenantOf(args: ParsedArgs): string | undefined {
  return stringOption(args, 'tenant')
}

async function withStore<T>(store: SessionStore, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } finally {
    await store.close().catch(() => {})
  }
}

function ago(epochMs: number | null): string {
  if (epochMs === null) return '—'
  const seconds = Math.max(0, (Date.now() - epochMs) / 1000)
  if (seconds < 90) return `${Math.round(seconds)}s ago`
  if (seconds < 5400) return `${Math.round(seconds / 60)}m ago`
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h ago`
  return `${Math.round(seconds / 86_400)}d ago`
}

/** `sandkeep sessions list` */
export const sessionsListCommand: Command = {
  spec: spec('list', "List a tenant's sessions, most recently active first.", {
    options: {
      limit: {
        type: 'string',
        valueName: '<n>',
        description: 'At most this many (1–1000).',
        defaultText: '50',
      },
      cursor: { type: 'string', valueName: '<cursor>', description: 'Continue from a previous page.' },
    },
    examples: [
      'REDIS_URL=redis://127.0.0.1:6379 sandkeep sessions list',
      'sandkeep sessions list --tenant acme --json',
    ],
  }),
  async run(args, context) {
    const limit = integerOption(args, 'sessions list', 'limit', { min: 1, max: 1000 }) ?? 50
    const tenant = await tenantFrom(args, 'sessions list')
    const store = await openSessionStore(args, context, 'sessions list')
    const cursor = stringOption(args, 'cursor')
    const page = await withStore(store, () => store.list(tenant, { limit, ...(cursor ? { cursor } : {}) }))
    if (flagOption(args, 'json')) {
      context.stdout.write(
        `${JSON.stringify({ tenant, sessions: page.sessions, cursor: page.cursor ?? null })}\n`,
      )
      return ExitCode.OK
    }
    if (page.sessions.length === 0) {
      context.stdout.write(`no sessions for tenant ${tenant}\n`)
      return ExitCode.OK
    }
    const style = createStyle(colorEnabled(context.stdout, context.env))
    const rows = [
      ['conversation', 'sandbox', 'state', 'turns', 'running s', 'paused s', 'last turn'].map(style.bold),
      ...page.sessions.map((record) => [
        truncate(record.conversationId, 40),
        record.sandboxId ?? '—',
        record.state,
        String(record.turnCount),
        record.runningSeconds.toFixed(1),
        record.pausedSeconds.toFixed(1),
        ago(record.lastTurnEndedAt ?? record.lastTurnStartedAt),
      ]),
    ]
    context.stdout.write(`${formatTable(rows, { right: [3, 4, 5] })}\n`)
    if (page.cursor) context.stdout.write(`more: sandkeep sessions list --cursor ${page.cursor}\n`)
    return ExitCode.OK
  },
}

/** `sandkeep sessions show` */
export const sessionsShowCommand: Command = {
  spec: spec('show', 'Show one session: its sandbox, state, counters, last manifest and journal.', {
    positionals: { names: ['<conversation-id>'], min: 1 },
  }),
  async run(args, context) {
    const key = await sessionKeyOf(args, 'sessions show')
    const store = await openSessionStore(args, context, 'sessions show')
    const { record, journal } = await withStore(store, async () => {
      const found = await store.get(key)
      return { record: found, journal: found ? await store.readJournal(key) : [] }
    })
    if (!record) {
      if (flagOption(args, 'json')) context.stdout.write(`${JSON.stringify({ session: null })}\n`)
      else
        context.stderr.write(
          `sandkeep sessions show: no session ${JSON.stringify(key.conversationId)} for tenant ${key.tenant}\n`,
        )
      return ExitCode.FAILURE
    }
    if (flagOption(args, 'json')) {
      context.stdout.write(`${JSON.stringify({ session: record, journal })}\n`)
      return ExitCode.OK
    }
    context.stdout.write(describeRecord(record, journal.length))
    for (const [index, entry] of journal.entries()) {
      const step = entry.step
      const summary =
        step.kind === 'command'
          ? `$ ${step.command}`
          : step.kind === 'code'
            ? `${step.language ?? 'python'}: ${step.code}`
            : `file ${step.path} (${Buffer.byteLength(step.content)} bytes)`
      context.stdout.write(
        `  ${String(index + 1).padStart(3)}. ${truncate(summary.replace(/\n/g, ' ⏎ '), 100)}\n`,
      )
    }
    return ExitCode.OK
  },
}

function describeRecord(record: SessionRecord, journalSteps: number): string {
  const time = (value: number | null) =>
    value === null ? '—' : `${new Date(value).toISOString()} (${ago(value)})`
  const rows: Array<[string, string]> = [
    ['conversation', record.conversationId],
    ['tenant', record.tenant],
    ['sandbox', record.sandboxId ?? '—'],
    ['provider', record.providerId ?? '—'],
    ['template', record.template ?? '—'],
    ['state', record.state + (record.pausedAt ? ` since ${time(record.pausedAt)}` : '')],
    ['turns', String(record.turnCount)],
    ['running', `${record.runningSeconds.toFixed(1)} s`],
    ['paused', `${record.pausedSeconds.toFixed(1)} s`],
    ['created', time(record.createdAt)],
    ['last turn', time(record.lastTurnEndedAt ?? record.lastTurnStartedAt)],
  ]
  const manifest = record.manifest
  if (manifest) {
    rows.push([
      'manifest',
      [
        manifest.memory ? `${manifest.memory.length} interpreter sentinel(s)` : 'no interpreter',
        manifest.filesystem ? `marker ${manifest.filesystem.path}` : 'no marker',
        manifest.processes ? `${manifest.processes.length} process(es)` : 'processes not tracked',
      ].join(', '),
    ])
    for (const process of manifest.processes ?? [])
      rows.push(['', `pid ${process.pid}: ${truncate(process.command, 80)}`])
  }
  rows.push(['journal', `${journalSteps} step${journalSteps === 1 ? '' : 's'}`])
  return `${rows.map(([name, value]) => `${name.padEnd(13)}${value}`).join('\n')}\n`
}

/** `sandkeep sessions end` */
export const sessionsEndCommand: Command = {
  spec: spec('end', 'End a session: kill its sandbox and delete the mapping and journal.', {
    positionals: { names: ['<conversation-id>'], min: 1 },
    options: {
      forget: {
        type: 'boolean',
        description:
          'Only delete the session from the store, without asking the platform to kill the sandbox.',
      },
    },
  }),
  async run(args, context) {
    const key = await sessionKeyOf(args, 'sessions end')
    const store = await openSessionStore(args, context, 'sessions end')
    const forget = flagOption(args, 'forget')
    const ended = await withStore(store, async () => {
      if (forget) return store.delete(key)
      const manager = await openManager(store, context, 'sessions end')
      return manager.endSession(key.conversationId, { tenant: key.tenant })
    })
    if (flagOption(args, 'json')) {
      context.stdout.write(
        `${JSON.stringify({ ended, conversationId: key.conversationId, tenant: key.tenant, killed: ended && !forget })}\n`,
      )
    } else if (ended) {
      context.stdout.write(
        `ended ${key.conversationId}${forget ? ' (record deleted; sandbox left alone)' : ': sandbox killed, session deleted'}\n`,
      )
    } else {
      context.stderr.write(
        `sandkeep sessions end: no session ${JSON.stringify(key.conversationId)} for tenant ${key.tenant}\n`,
      )
    }
    return ended ? ExitCode.OK : ExitCode.FAILURE
  },
}

/** `sandkeep sessions gc` */
export const sessionsGcCommand: Command = {
  spec: spec('gc', 'Kill sandboxes no session maps to, and delete sessions whose sandbox is gone.', {
    description: `Kill sandboxes no session maps to, and delete sessions whose sandbox is gone.

Sandboxes are found by the metadata sandkeep puts on them (sandkeep.tenant). A sandbox younger than the
manager's creation wait plus its lease (90 s by default) is left alone: its creator may not have mapped it
yet. A session is only deleted once the platform confirms its sandbox is gone.`,
    options: { 'dry-run': { type: 'boolean', description: 'Only report what would be done.' } },
  }),
  async run(args, context) {
    const tenant = await tenantFrom(args, 'sessions gc')
    const store = await openSessionStore(args, context, 'sessions gc')
    const dryRun = flagOption(args, 'dry-run')
    const result = await withStore(store, async () => {
      const manager = await openManager(store, context, 'sessions gc')
      return manager.gc({ tenant, dryRun })
    })
    if (flagOption(args, 'json')) {
      context.stdout.write(`${JSON.stringify({ dryRun, ...result })}\n`)
      return ExitCode.OK
    }
    const verb = dryRun ? 'would ' : ''
    context.stdout.write(
      `${verb}kill ${result.killedSandboxes.length} orphaned sandbox${result.killedSandboxes.length === 1 ? '' : 'es'}` +
        `${result.killedSandboxes.length ? `: ${result.killedSandboxes.join(', ')}` : ''}\n`,
    )
    context.stdout.write(
      `${verb}delete ${result.deletedSessions.length} session${result.deletedSessions.length === 1 ? '' : 's'} whose sandbox is gone` +
        `${result.deletedSessions.length ? `: ${result.deletedSessions.map((session) => `${session.tenant}/${session.conversationId}`).join(', ')}` : ''}\n`,
    )
    return ExitCode.OK
  },
}

/** `sandkeep sessions` alone: help for the group. */
export const sessionsCommand: Command = {
  spec: {
    name: 'sessions',
    summary: 'Inspect and manage sessions in the configured store: list, show, end, gc.',
    positionals: { names: ['<list|show|end|gc>'], min: 1 },
    description: `Subcommands:
  list   List a tenant's sessions, most recently active first.
  show   Show one session: its sandbox, state, counters, last manifest and journal.
  end    End a session: kill its sandbox and delete the mapping and journal.
  gc     Kill sandboxes no session maps to, and delete sessions whose sandbox is gone.

Run sandkeep sessions <subcommand> --help for its options.`,
    options: {},
    sections: [environment],
  },
  async run() {
    throw new UsageError('sessions', 'name a subcommand: list, show, end or gc')
  },
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}
