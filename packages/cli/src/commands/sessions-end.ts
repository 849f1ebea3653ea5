// `sandkeep sessions end`: kill a session's sandbox (unless --forget), delete the session and its checkpoint
// snapshots, and say what the platform actually did with each.
import type { SandboxProvider } from '@sandkeep/core'
import { flagOption } from '../args.js'
import { type Command, ExitCode } from '../command.js'
import { noSession, openManager, openSessionStore, sessionKeyOf, spec, withStore } from './sessions-common.js'

/** What the platform answered for the session's sandbox. */
type SandboxOutcome =
  /** The session mapped no sandbox. */
  | 'none'
  /** The platform confirmed the kill. */
  | 'killed'
  /** The platform does not know the sandbox with this key: already gone, or made with another key. */
  | 'not-found'
  /** The sandbox belongs to another tenant: left alone. */
  | 'left-alone'

/** What `sessions end` found out, from the provider calls the manager made and its error events. */
interface EndReport {
  sandboxId: string | null
  sandbox: SandboxOutcome
  /** Checkpoint snapshots the platform confirmed deleted. */
  deletedSnapshots: string[]
  /** Checkpoint snapshots the platform did not know with this key: left behind if they exist. */
  missingSnapshots: string[]
  /** Problems the manager reported without failing (a snapshot it could not delete, a wrong mapping). */
  problems: string[]
}

/** Wraps the provider so the answers to `getInfo`, `kill` and `deleteSnapshot` are recorded in `report`. */
function watchProvider(provider: SandboxProvider, report: EndReport): SandboxProvider {
  return new Proxy(provider, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      if (property === 'kill') {
        return async (sandboxId: string, options?: { signal?: AbortSignal }) => {
          report.sandboxId = sandboxId
          const killed: boolean = await value.call(target, sandboxId, options)
          report.sandbox = killed ? 'killed' : 'not-found'
          return killed
        }
      }
      if (property === 'getInfo') {
        return async (sandboxId: string, options?: { signal?: AbortSignal }) => {
          report.sandboxId = sandboxId
          try {
            return await value.call(target, sandboxId, options)
          } catch (error) {
            if ((error as { code?: unknown }).code === 'SANDBOX_NOT_FOUND') report.sandbox = 'not-found'
            throw error
          }
        }
      }
      if (property === 'deleteSnapshot') {
        return async (snapshotId: string, options?: { signal?: AbortSignal }) => {
          const deleted: boolean = await value.call(target, snapshotId, options)
          ;(deleted ? report.deletedSnapshots : report.missingSnapshots).push(snapshotId)
          return deleted
        }
      }
      return value.bind(target)
    },
  })
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The human lines of a finished end: one line when all went well, then a line per thing left behind. */
function describe(conversationId: string, report: EndReport): string {
  const sandbox = {
    killed: 'sandbox killed, session deleted',
    'not-found': `session deleted; sandbox ${report.sandboxId} was not found on the platform (already gone, or E2B_API_KEY is not the key that created it)`,
    'left-alone': `session deleted; sandbox ${report.sandboxId} belongs to another tenant and was left alone (the mapping was wrong)`,
    none: 'session deleted (no sandbox was mapped)',
  }[report.sandbox]
  const count = report.deletedSnapshots.length
  const lines = [
    `ended ${conversationId}: ${sandbox}${count ? `, ${count} checkpoint snapshot${count === 1 ? '' : 's'} deleted` : ''}`,
  ]
  for (const snapshotId of report.missingSnapshots)
    lines.push(
      `  left behind: checkpoint snapshot ${snapshotId}: the platform does not know it with this E2B_API_KEY; delete it with the key that made it`,
    )
  for (const problem of report.problems) lines.push(`  left behind: ${problem}`)
  return `${lines.join('\n')}\n`
}

/** `sandkeep sessions end` */
export const sessionsEndCommand: Command = {
  spec: spec(
    'end',
    'End a session: kill its sandbox and delete the mapping, journal and checkpoint snapshots.',
    {
      positionals: { names: ['<conversation-id>'], min: 1 },
      description: `End a session: kill its sandbox, delete the session (mapping, journal, checkpoints) and the
checkpoints' snapshots on the platform. Prints what the platform did with each. Exit 1 when something was
left behind (a snapshot the platform did not know with this key, one it failed to delete, another tenant's
sandbox) or there was no such session.`,
      options: {
        forget: {
          type: 'boolean',
          description:
            'Only delete the session from the store, without asking the platform to kill the sandbox.',
        },
      },
    },
  ),
  async run(args, context) {
    const key = await sessionKeyOf(args, 'sessions end')
    const store = await openSessionStore(args, context, 'sessions end')
    const forget = flagOption(args, 'forget')
    const report: EndReport = {
      sandboxId: null,
      sandbox: 'none',
      deletedSnapshots: [],
      missingSnapshots: [],
      problems: [],
    }
    const ended = await withStore(store, async () => {
      if (forget) return store.delete(key)
      const manager = await openManager(store, context, 'sessions end', (provider) =>
        watchProvider(provider, report),
      )
      const stop = manager.on('error', (event) => {
        if (event.phase === 'end-session') {
          report.sandbox = 'left-alone'
        } else if (event.phase === 'delete-snapshot') {
          report.problems.push(`a checkpoint snapshot could not be deleted: ${message(event.error)}`)
        } else report.problems.push(`${event.phase}: ${message(event.error)}`)
      })
      try {
        return await manager.endSession(key.conversationId, { tenant: key.tenant })
      } finally {
        stop()
      }
    })
    const leftBehind =
      report.missingSnapshots.length > 0 || report.problems.length > 0 || report.sandbox === 'left-alone'
    if (flagOption(args, 'json')) {
      context.stdout.write(
        `${JSON.stringify({
          ended,
          conversationId: key.conversationId,
          tenant: key.tenant,
          killed: ended && report.sandbox === 'killed',
          ...(forget ? {} : { ...report, leftBehind }),
        })}\n`,
      )
    } else if (!ended) {
      context.stderr.write(noSession('sessions end', key))
    } else if (forget) {
      context.stdout.write(`ended ${key.conversationId} (record deleted; sandbox left alone)\n`)
    } else {
      ;(leftBehind ? context.stderr : context.stdout).write(describe(key.conversationId, report))
    }
    return ended && !leftBehind ? ExitCode.OK : ExitCode.FAILURE
  },
}
