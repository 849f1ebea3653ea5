// `sandkeep sessions list`: a page of a tenant's sessions, as a table or JSON.
import { flagOption, integerOption, stringOption } from '../args.js'
import { type Command, ExitCode } from '../command.js'
import { colorEnabled, createStyle, formatTable, truncate } from '../terminal.js'
import { ago, openSessionStore, spec, tenantFrom, withStore } from './sessions-common.js'

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
