// `sandkeep sessions show`: one session, its manifest, its checkpoint tree and its journal.
import type { Checkpoint, SessionRecord } from '@sandkeep/core'
import { flagOption } from '../args.js'
import { drawCheckpointTree, type TreeCheckpoint } from '../checkpoint-tree.js'
import { type Command, ExitCode } from '../command.js'
import { truncate } from '../terminal.js'
import { ago, noSession, openSessionStore, sessionKeyOf, spec, withStore } from './sessions-common.js'

/** `sandkeep sessions show` */
export const sessionsShowCommand: Command = {
  spec: spec(
    'show',
    'Show one session: its sandbox, state, counters, manifest, checkpoint tree and journal.',
    {
      positionals: { names: ['<conversation-id>'], min: 1 },
    },
  ),
  async run(args, context) {
    const key = await sessionKeyOf(args, 'sessions show')
    const store = await openSessionStore(args, context, 'sessions show')
    const { record, journal, checkpoints } = await withStore(store, async () => {
      const found = await store.get(key)
      if (!found) return { record: null, journal: [], checkpoints: [] }
      // A store without checkpoints (an older one) keeps none: shown as an empty list, not an error.
      const kept = typeof store.readCheckpoints === 'function' ? await store.readCheckpoints(key) : []
      return { record: found, journal: await store.readJournal(key), checkpoints: kept }
    })
    if (!record) {
      if (flagOption(args, 'json')) context.stdout.write(`${JSON.stringify({ session: null })}\n`)
      else context.stderr.write(noSession('sessions show', key))
      return ExitCode.FAILURE
    }
    if (flagOption(args, 'json')) {
      context.stdout.write(`${JSON.stringify({ session: record, journal, checkpoints })}\n`)
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
    context.stdout.write(describeCheckpoints(checkpoints, headOf(record, checkpoints), key.conversationId))
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
  if (record.restore) {
    const { restore } = record
    const from = restore.snapshot ? `snapshot ${restore.snapshot.snapshotId}` : 'the journal'
    const fork = restore.fromConversationId ? ` of ${restore.fromConversationId}` : ''
    rows.push([
      'restore',
      `pending: ${restore.kind} to the end of turn ${restore.turn}${fork}, from ${from} (the next turn carries it out)`,
    ])
  }
  rows.push(['journal', `${journalSteps} step${journalSteps === 1 ? '' : 's'}`])
  return `${rows.map(([name, value]) => `${name.padEnd(13)}${value}`).join('\n')}\n`
}

/**
 * The session's head: the checkpoint its next turn starts from. A record written before checkpoint trees
 * has none: its newest checkpoint is.
 */
function headOf(record: SessionRecord, checkpoints: readonly Checkpoint[]): string | null {
  const head = (record as { head?: string | null }).head
  if (head !== undefined) return head
  const newest = checkpoints.at(-1) as TreeCheckpoint | undefined
  return newest?.id ?? null
}

/** The checkpoint tree (`checkpoints` oldest first): the head marked, each one's turn, age and source. */
function describeCheckpoints(
  checkpoints: readonly Checkpoint[],
  head: string | null,
  conversationId: string,
): string {
  if (checkpoints.length === 0) {
    return `${'checkpoints'.padEnd(13)}none (taken by a session manager with the checkpoints option)\n`
  }
  const tree = drawCheckpointTree(checkpoints as unknown as TreeCheckpoint[], { head })
  const hint = `sandkeep sessions restore ${conversationId} --checkpoint <id>`
  return `${'checkpoints'.padEnd(13)}${checkpoints.length} kept, as a tree (restore to any: ${hint})\n${tree.map((line) => `  ${line}`).join('\n')}\n`
}
