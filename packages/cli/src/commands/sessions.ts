// `sandkeep sessions` alone: the group's help. Each subcommand has its own file (sessions-list.ts, ...).
import { UsageError } from '../args.js'
import type { Command } from '../command.js'
import { environment } from './sessions-common.js'

/** `sandkeep sessions` alone: help for the group. */
export const sessionsCommand: Command = {
  spec: {
    name: 'sessions',
    summary:
      'Inspect and manage sessions in the configured store: list, show, end, gc, restore, rewind, fork.',
    positionals: { names: ['<list|show|end|gc|restore|rewind|fork>'], min: 1 },
    description: `Subcommands:
  list     List a tenant's sessions, most recently active first.
  show     Show one session: its sandbox, state, counters, manifest, checkpoints and journal.
  end      End a session: kill its sandbox and delete the mapping and journal.
  gc       Kill sandboxes no session maps to; report (or delete) sessions whose sandbox is gone.
  restore  Move a session to one of its checkpoints, on any branch (its next turn starts there).
  rewind   Set a session back to the end of one of its turns (its next turn restores it).
  fork     Start a new conversation from a checkpoint of a session; the source is not touched.

Run sandkeep sessions <subcommand> --help for its options.`,
    options: {},
    sections: [environment],
  },
  async run() {
    throw new UsageError('sessions', 'name a subcommand: list, show, end, gc, restore, rewind or fork')
  },
}
