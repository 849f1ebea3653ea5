// `sandkeep sessions gc`: orphaned sandboxes, and sessions whose sandbox is gone (kept, or deleted on request).
import { flagOption, stringOption } from '../args.js'
import { type Command, ExitCode } from '../command.js'
import { openManager, openSessionStore, spec, tenantFrom, withStore } from './sessions-common.js'

/** `sandkeep sessions gc` */
export const sessionsGcCommand: Command = {
  spec: spec('gc', 'Kill sandboxes no session maps to; report sessions whose sandbox is gone.', {
    description: `Kill sandboxes no session maps to, and report sessions whose sandbox is gone.

Sandboxes are found by the metadata sandkeep puts on them (sandkeep.tenant). A sandbox younger than the
manager's creation wait plus its lease (90 s by default, by the store's clock) is left alone: its creator
may not have mapped it yet. A session whose sandbox the platform confirms gone is kept with its journal
until its TTL: its next turn recreates the sandbox and replays the journal. --delete-sessions deletes those
sessions instead; their conversations then start over as new ones.

Without --tenant, gc sweeps every tenant (each tenant that has sandkeep sandboxes, and default); with
--tenant, only that one.`,
    options: {
      tenant: {
        type: 'string',
        valueName: '<tenant>',
        description: 'Only this tenant.',
        defaultText: 'every tenant',
      },
      'dry-run': { type: 'boolean', description: 'Only report what would be done.' },
      'delete-sessions': {
        type: 'boolean',
        description: 'Delete sessions whose sandbox is gone, journal and all, instead of keeping them.',
      },
    },
  }),
  async run(args, context) {
    // No --tenant means every tenant: a default of `default` would leave other tenants' orphans running.
    const tenant =
      stringOption(args, 'tenant') === undefined ? undefined : await tenantFrom(args, 'sessions gc')
    const store = await openSessionStore(args, context, 'sessions gc')
    const dryRun = flagOption(args, 'dry-run')
    const deleteSessions = flagOption(args, 'delete-sessions')
    const result = await withStore(store, async () => {
      const manager = await openManager(store, context, 'sessions gc')
      return manager.gc({ ...(tenant === undefined ? {} : { tenant }), dryRun, deleteSessions })
    })
    if (flagOption(args, 'json')) {
      context.stdout.write(`${JSON.stringify({ dryRun, tenant: tenant ?? null, ...result })}\n`)
      return ExitCode.OK
    }
    const verb = dryRun ? 'would ' : ''
    context.stdout.write(
      `${verb}kill ${result.killedSandboxes.length} orphaned sandbox${result.killedSandboxes.length === 1 ? '' : 'es'}` +
        `${result.killedSandboxes.length ? `: ${result.killedSandboxes.join(', ')}` : ''}\n`,
    )
    const sessions = (list: Array<{ tenant: string; conversationId: string }>) =>
      `${list.length} session${list.length === 1 ? '' : 's'} whose sandbox is gone` +
      `${list.length ? `: ${list.map((session) => `${session.tenant}/${session.conversationId}`).join(', ')}` : ''}`
    context.stdout.write(
      deleteSessions
        ? `${verb}delete ${sessions(result.deletedSessions)}\n`
        : `keep ${sessions(result.keptSessions)} (the next turn recreates and replays the journal)\n`,
    )
    return ExitCode.OK
  },
}
