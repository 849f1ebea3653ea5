// `sandkeep sessions restore`: move a session's head to one of its checkpoints, on any branch of its tree;
// its next turn starts from there. Nothing is deleted: every other branch stays restorable.
import { flagOption, stringOption, UsageError } from '../args.js'
import { type Command, ExitCode } from '../command.js'
import { openManager, openSessionStore, sessionKeyOf, spec, withStore } from './sessions-common.js'

/** The longest checkpoint id taken (store ids are far shorter). */
const CHECKPOINT_ID_MAX = 256

/** `sandkeep sessions restore` */
export const sessionsRestoreCommand: Command = {
  spec: spec(
    'restore',
    'Move a session to one of its checkpoints, on any branch (its next turn starts there).',
    {
      positionals: { names: ['<conversation-id>'], min: 1 },
      description: `Move the session's head to the checkpoint --checkpoint names (an id that sandkeep sessions show prints,
or that a chat's answer carries in its metadata), on any branch of the conversation's checkpoint tree, or
to the root (--root: before the first turn). Its next turn starts from that checkpoint: a sandbox made from
its snapshot, or a fresh one with that branch's journal replayed. The sandbox mapped now is killed; no
checkpoint and no journal step is deleted, so the branch left stays restorable.

Refused, with nothing changed, when the conversation has no such checkpoint (pruned, another
conversation's or tenant's, mistyped) or a turn of it is running.`,
      options: {
        checkpoint: {
          type: 'string',
          valueName: '<id>',
          description: 'The checkpoint to restore to (sandkeep sessions show lists them).',
        },
        root: {
          type: 'boolean',
          description: 'Restore to the root: the next turn starts from an empty sandbox.',
        },
      },
      examples: [
        'sandkeep sessions restore chat-42 --checkpoint ck_3q2xYvW0pLk8mN1aB4cD5e',
        'sandkeep sessions restore chat-42 --root --json',
      ],
    },
  ),
  async run(args, context) {
    const key = await sessionKeyOf(args, 'sessions restore')
    const id = stringOption(args, 'checkpoint')
    const root = flagOption(args, 'root')
    if (id === undefined && !root) {
      throw new UsageError('sessions restore', 'missing --checkpoint <id> (or --root)')
    }
    if (id !== undefined && root) {
      throw new UsageError('sessions restore', 'give --checkpoint <id> or --root, not both')
    }
    if (
      id !== undefined &&
      (id.length === 0 || id.length > CHECKPOINT_ID_MAX || !/^[A-Za-z0-9_.:-]+$/.test(id))
    ) {
      throw new UsageError(
        'sessions restore',
        `--checkpoint ${JSON.stringify(id.slice(0, 80))} is not a checkpoint id (letters, digits and _ . : -; sandkeep sessions show lists them)`,
      )
    }
    const checkpoint = id ?? null
    const store = await openSessionStore(args, context, 'sessions restore')
    const result = await withStore(store, async () => {
      const manager = await openManager(store, context, 'sessions restore')
      return manager.restore(key.conversationId, { checkpoint, tenant: key.tenant })
    })
    if (flagOption(args, 'json')) {
      context.stdout.write(
        `${JSON.stringify({ conversationId: key.conversationId, tenant: key.tenant, ...result })}\n`,
      )
      return ExitCode.OK
    }
    const to = result.checkpoint
      ? `checkpoint ${result.checkpoint.id} (turn ${result.checkpoint.turn})`
      : 'the root (before the first turn)'
    const from =
      result.source === 'snapshot'
        ? `the snapshot ${result.checkpoint?.snapshot?.snapshotId}`
        : result.checkpoint
          ? 'a fresh sandbox and the journal'
          : 'a fresh sandbox'
    const killed = result.killedSandboxId ? `killed ${result.killedSandboxId}` : 'no sandbox was mapped'
    context.stdout.write(
      `restored ${key.conversationId} to ${to}: its next turn starts from ${from} (${killed}; every other branch is kept)\n`,
    )
    return ExitCode.OK
  },
}
