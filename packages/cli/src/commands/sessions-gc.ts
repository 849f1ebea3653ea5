// `sandkeep sessions gc`: orphaned sandboxes and sessions whose sandbox is gone.
import { flagOption } from '../args.js'
import { type Command, ExitCode } from '../command.js'
import { openManager, openSessionStore, spec, tenantFrom, withStore } from './sessions-common.js'

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
