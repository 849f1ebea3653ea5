// `sandkeep sessions end`: kill a session's sandbox (unless --forget) and delete the session.
import { flagOption } from '../args.js'
import { type Command, ExitCode } from '../command.js'
import { noSession, openManager, openSessionStore, sessionKeyOf, spec, withStore } from './sessions-common.js'

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
      context.stderr.write(noSession('sessions end', key))
    }
    return ended ? ExitCode.OK : ExitCode.FAILURE
  },
}
