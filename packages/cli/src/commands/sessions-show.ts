// `sandkeep sessions show`: one session, its manifest, checkpoints and journal.
import type { Checkpoint, SessionRecord } from '@sandkeep/core'
import { flagOption } from '../args.js'
import { type Command, ExitCode } from '../command.js'
import { formatTable, truncate } from '../terminal.js'
import { ago, noSession, openSessionStore, sessionKeyOf, spec, withStore } from './sessions-common.js'

/** `sandkeep sessions show` */
export const sessionsShowCommand: Command = {
  spec: spec('show', 'Show one session: its sandbox, state, counters, manifest, checkpoints and journal.', {
    positionals: { names: ['<conversation-id>'], min: 1 },
  }),
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
    context.stdout.write(describeCheckpoints(checkpoints))
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

/** The checkpoints, oldest first: turn, when, snapshot (or the journal alone), journal length. */
function describeCheckpoints(checkpoints: readonly Checkpoint[]): string {
  if (checkpoints.length === 0) {
    return `${'checkpoints'.padEnd(13)}none (taken by a session manager with the checkpoints option)\n`
  }
  const rows = [
    ['turn', 'when', 'snapshot', 'journal'],
    ...checkpoints.map((checkpoint) => [
      String(checkpoint.turn),
      `${new Date(checkpoint.createdAt).toISOString()} (${ago(checkpoint.createdAt)})`,
      checkpoint.snapshot ? checkpoint.snapshot.snapshotId : 'journal only',
      `${checkpoint.journalLength} step${checkpoint.journalLength === 1 ? '' : 's'}`,
    ]),
  ]
  return `${'checkpoints'.padEnd(13)}${checkpoints.length} kept (rewind or fork to any of these turns)\n${formatTable(rows, { right: [0], indent: '  ' })}\n`
}
