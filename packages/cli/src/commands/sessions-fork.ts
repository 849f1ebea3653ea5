// `sandkeep sessions fork`: start a new conversation from a checkpoint of another; the source is not touched.
import { flagOption, UsageError } from '../args.js'
import { type Command, ExitCode } from '../command.js'
import {
  openManager,
  openSessionStore,
  sessionKeyOf,
  spec,
  turnOption,
  withStore,
} from './sessions-common.js'

/** `sandkeep sessions fork` */
export const sessionsForkCommand: Command = {
  spec: spec('fork', 'Start a new conversation from a checkpoint of a session; the source is not touched.', {
    positionals: { names: ['<conversation-id>', '<new-conversation-id>'], min: 2 },
    description: `Start <new-conversation-id> from the end of turn N of <conversation-id> (its latest checkpoint by default):
its first turn gets its own sandbox from that checkpoint (the checkpoint's snapshot, or a fresh sandbox
with the journal replayed that far) and its own copy of the journal. The source session is not touched.

Refused, with nothing written, when <new-conversation-id> already has a session or the source keeps no
checkpoint of turn N. sandkeep sessions show lists a session's checkpoints.`,
    options: {
      'at-turn': {
        type: 'string',
        valueName: '<n>',
        description: 'The source turn whose end the fork starts from (0 = before the first turn).',
        defaultText: 'the latest checkpoint',
      },
    },
    examples: [
      'sandkeep sessions fork chat-42 chat-42-b',
      'sandkeep sessions fork chat-42 chat-42-b --at-turn 2',
    ],
  }),
  async run(args, context) {
    const key = await sessionKeyOf(args, 'sessions fork')
    const target = await sessionKeyOf({ ...args, positionals: args.positionals.slice(1) }, 'sessions fork')
    if (target.conversationId === key.conversationId)
      throw new UsageError('sessions fork', '<new-conversation-id> must differ from the conversation forked')
    const atTurn = turnOption(args, 'sessions fork', 'at-turn')
    const store = await openSessionStore(args, context, 'sessions fork')
    const result = await withStore(store, async () => {
      const manager = await openManager(store, context, 'sessions fork')
      return manager.fork(key.conversationId, target.conversationId, {
        tenant: key.tenant,
        ...(atTurn === undefined ? {} : { atTurn }),
      })
    })
    if (flagOption(args, 'json')) {
      context.stdout.write(
        `${JSON.stringify({ fromConversationId: key.conversationId, tenant: key.tenant, ...result })}\n`,
      )
      return ExitCode.OK
    }
    const from = result.source === 'snapshot' ? 'its snapshot' : 'a fresh sandbox and the journal'
    context.stdout.write(
      `forked ${key.conversationId} at turn ${result.atTurn} into ${result.conversationId}: its first turn starts from ${from}\n`,
    )
    return ExitCode.OK
  },
}
