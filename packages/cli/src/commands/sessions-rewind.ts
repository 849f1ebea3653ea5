// `sandkeep sessions rewind`: set a session back to the end of one of its turns; its next turn restores it.
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

/** `sandkeep sessions rewind` */
export const sessionsRewindCommand: Command = {
  spec: spec('rewind', 'Set a session back to the end of one of its turns (its next turn restores it).', {
    positionals: { names: ['<conversation-id>'], min: 1 },
    description: `Set a session back to the end of turn N: its next turn starts from that turn's checkpoint (a sandbox made
from the checkpoint's snapshot, or a fresh one with the journal replayed that far). The journal steps and
checkpoints after turn N are dropped and the sandbox mapped now is killed. --to-turn 0 starts over.

Refused, with nothing changed, when the session keeps no checkpoint of turn N (pruned, never taken, past the
last turn) or a turn of it is running. Checkpoints are taken by a session manager with the checkpoints
option (sandkeep demo --transcript branching takes them); sandkeep sessions show lists them.`,
    options: {
      'to-turn': {
        type: 'string',
        valueName: '<n>',
        description: 'The turn whose end the next turn starts from (0 = before the first turn).',
      },
    },
    examples: [
      'sandkeep sessions rewind chat-42 --to-turn 3',
      'sandkeep sessions rewind chat-42 --to-turn 0 --json',
    ],
  }),
  async run(args, context) {
    const key = await sessionKeyOf(args, 'sessions rewind')
    const toTurn = turnOption(args, 'sessions rewind', 'to-turn')
    if (toTurn === undefined) throw new UsageError('sessions rewind', 'missing --to-turn <n>')
    const store = await openSessionStore(args, context, 'sessions rewind')
    const result = await withStore(store, async () => {
      const manager = await openManager(store, context, 'sessions rewind')
      return manager.rewind(key.conversationId, { toTurn, tenant: key.tenant })
    })
    if (flagOption(args, 'json')) {
      context.stdout.write(
        `${JSON.stringify({ conversationId: key.conversationId, tenant: key.tenant, ...result })}\n`,
      )
      return ExitCode.OK
    }
    const from =
      result.source === 'snapshot'
        ? `the snapshot ${result.checkpoint?.snapshot?.snapshotId}`
        : 'a fresh sandbox and the journal'
    const dropped = result.droppedTurns.length
      ? `dropped turn${result.droppedTurns.length === 1 ? '' : 's'} ${result.droppedTurns.join(', ')}`
      : 'no later turn to drop'
    const killed = result.killedSandboxId ? `killed ${result.killedSandboxId}` : 'no sandbox was mapped'
    context.stdout.write(
      `rewound ${key.conversationId} to the end of turn ${toTurn}: its next turn starts from ${from} (${dropped}; ${killed})\n`,
    )
    return ExitCode.OK
  },
}
