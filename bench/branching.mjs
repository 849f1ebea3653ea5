// What checkpoints cost and what a rewind gets back, on one local-e2b host, side by side in one run: the turn
// end with checkpoints on (a platform snapshot per turn) vs off, the disk a checkpoint takes, and a rewind's
// next turn until its first tool call answers: restored from the snapshot vs a fresh sandbox with the journal
// replayed (checkpoints of a provider without snapshots: the journal's position alone). Variants run
// round-robin, so machine noise falls on all of them alike.
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createMemorySessionStore, createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { ms, summary, table } from './stats.mjs'

const checkpoints = { every: 'turn', keep: 1000 }
/** The file each turn writes (journaled; 20 turns stay under the journal's 1 MiB): what a replay writes back, a snapshot copies. */
const FILE_BYTES = 32 * 1024

/** The same work in every turn: a journaled file and a journaled cell that leaves a variable. */
async function work(turn, n) {
  const path = `/home/user/turn-${n}.txt`
  const content = `${String(n).padStart(8, '0')}\n`.repeat(FILE_BYTES / 9)
  await turn.sandbox.writeFile(path, content)
  await turn.journal.record({ kind: 'file', path, content })
  const code = `v${n} = sum(range(${n} * 1000))`
  await turn.sandbox.runCode(code)
  await turn.journal.record({ kind: 'code', code })
}

/** The provider as one without the snapshot capability: its checkpoints are the journal's position alone. */
function withoutSnapshots(provider) {
  const hidden = new Set([
    'snapshotKeeps',
    'createSnapshot',
    'createFromSnapshot',
    'deleteSnapshot',
    'listSnapshots',
  ])
  return new Proxy(provider, {
    get(target, name) {
      if (hidden.has(name)) return undefined
      const value = Reflect.get(target, name)
      return typeof value === 'function' ? value.bind(target) : value
    },
    has(target, name) {
      return !hidden.has(name) && Reflect.has(target, name)
    },
  })
}

/**
 * Restores over the tree (issue 31 item 9): after the rewinds, the checkpoint at `toTurn` (P) has several
 * children at `toTurn + 1`, one per rewind's turn. Two of them are X and Y. Each round restores X, then Y,
 * then P, each followed by a turn whose first tool call is timed until it answers and whose end moves the
 * head on: X and Y are each a sibling of the checkpoint the head's last turn started from (another branch),
 * P the parent of that one.
 */
async function measureTreeRestores(managers, ids, toTurn, rounds) {
  const ready = { siblingSnapshot: [], parentSnapshot: [], siblingJournal: [], parentJournal: [] }
  const places = {}
  for (const variant of ['snapshot', 'journal']) {
    const { checkpoints } = await managers[variant].listCheckpoints(ids[variant])
    const parent = checkpoints.find((c) => c.turn === toTurn && c.parentId !== undefined)
    const children = checkpoints.filter((c) => c.parentId === parent?.id)
    if (!parent || children.length < 2) throw new Error(`${variant}: no two siblings under turn ${toTurn}`)
    // X: the first turn after P (its own file and cell journaled); Y: a turn after a rewind to P (its cell
    // not journaled, so its journal is P's).
    const [x, y] = [...children].sort((a, b) => b.journalLength - a.journalLength)
    places[variant] = {
      parent: parent.id,
      x: x.id,
      y: y.id,
      lengths: [x, y, parent].map((c) => c.journalLength),
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (const variant of r % 2 === 0 ? ['snapshot', 'journal'] : ['journal', 'snapshot']) {
      const { parent, x, y } = places[variant]
      for (const [where, checkpoint] of [
        ['sibling', x],
        ['sibling', y],
        ['parent', parent],
      ]) {
        const sessions = managers[variant]
        const restored = await sessions.restore(ids[variant], { checkpoint })
        if (restored.source !== variant)
          throw new Error(`expected a ${variant} restore, got ${restored.source}`)
        const started = performance.now()
        const turn = await sessions.beginTurn(ids[variant])
        const answer = await turn.sandbox.runCode(`v${toTurn}`)
        const took = performance.now() - started
        const expected = String((toTurn * 1000 * (toTurn * 1000 - 1)) / 2)
        if (answer.text !== expected)
          throw new Error(`${variant} ${where} restore lost v${toTurn}: ${answer.text}`)
        ready[`${where}${variant === 'snapshot' ? 'Snapshot' : 'Journal'}`].push(took)
        await turn.end()
      }
    }
  }
  return {
    journalLengths: places.journal.lengths,
    stats: {
      readySiblingSnapshot: summary(ready.siblingSnapshot),
      readyParentSnapshot: summary(ready.parentSnapshot),
      readySiblingJournal: summary(ready.siblingJournal),
      readyParentJournal: summary(ready.parentJournal),
    },
  }
}

function treeTable(stats, toTurn) {
  const row = (label, s) => [label, ms(s.p50), ms(s.p95), String(s.n)]
  return `\n${table(
    ['restore over the tree, then the first tool call', 'ready p50', 'ready p95', 'n'],
    [
      row(`to a sibling (turn ${toTurn + 1}, other branch), snapshot`, stats.readySiblingSnapshot),
      row(`to the parent (turn ${toTurn}), snapshot`, stats.readyParentSnapshot),
      row(`to a sibling (turn ${toTurn + 1}, other branch), journal`, stats.readySiblingJournal),
      row(`to the parent (turn ${toTurn}), journal`, stats.readyParentJournal),
    ],
  )}`
}

/** Bytes the directory takes on disk (allocated, as the host counts its snapshots). */
function diskBytes(path) {
  return Number(execFileSync('du', ['-s', '--block-size=1', path], { encoding: 'utf8' }).split('\t')[0])
}

export async function runBranching({ turns = 20, rewinds = 8, log = console.log } = {}) {
  const stateDir = await mkdtemp(join(tmpdir(), 'sandkeep-bench-branching-'))
  const host = await startLocalE2B({ pauseMode: 'memory', stateDir, logger: () => {} })
  const connection = { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }
  const provider = createE2BProvider({ ...connection, snapshots: { keepsMemory: false } })
  const store = createMemorySessionStore()
  const managers = {
    off: createSessionManager({ store, provider }),
    snapshot: createSessionManager({ store, provider, checkpoints }),
    journal: createSessionManager({ store, provider: withoutSnapshots(provider), checkpoints }),
  }
  const ids = {
    off: `bench-${randomUUID()}`,
    snapshot: `bench-${randomUUID()}`,
    journal: `bench-${randomUUID()}`,
  }
  const endMs = { off: [], snapshot: [], journal: [] }
  const checkpointMs = []
  try {
    // Turn ends, the same workload in every variant; the journal-only one also builds the session rewound below.
    for (let n = 1; n <= turns; n++) {
      for (let k = 0; k < 3; k++) {
        const variant = ['off', 'snapshot', 'journal'][(n + k) % 3]
        const turn = await managers[variant].beginTurn(ids[variant])
        await work(turn, n)
        const started = performance.now()
        const end = await turn.end()
        endMs[variant].push(performance.now() - started)
        if (end.error) throw new Error(`bench turn end failed: ${JSON.stringify(end.error)}`)
        if (variant === 'snapshot') checkpointMs.push(end.timings.checkpointMs ?? 0)
      }
    }
    const created = host.events.list({ type: 'snapshot-create' })
    const eventBytes = created.map((event) => event.detail.bytes).filter((bytes) => typeof bytes === 'number')
    const snapshotsDir = join(stateDir, 'snapshots')
    const dirBytes = diskBytes(snapshotsDir)

    // Rewinds: back to the middle turn, then the next turn's first tool call (which needs the sandbox ready
    // and the journal replayed), then its end (so the next rewind has a later checkpoint to drop).
    const toTurn = Math.ceil(turns / 2)
    const ready = { snapshot: [], journal: [] }
    const rewindMs = { snapshot: [], journal: [] }
    for (let r = 0; r < rewinds; r++) {
      for (const variant of r % 2 === 0 ? ['snapshot', 'journal'] : ['journal', 'snapshot']) {
        const sessions = managers[variant]
        let started = performance.now()
        const rewound = await sessions.rewind(ids[variant], { toTurn })
        rewindMs[variant].push(performance.now() - started)
        if (rewound.source !== variant) throw new Error(`expected a ${variant} rewind, got ${rewound.source}`)
        started = performance.now()
        const turn = await sessions.beginTurn(ids[variant])
        const answer = await turn.sandbox.runCode(`v${toTurn}`)
        ready[variant].push(performance.now() - started)
        const expected = String((toTurn * 1000 * (toTurn * 1000 - 1)) / 2)
        if (answer.text !== expected) throw new Error(`${variant} restore lost v${toTurn}: ${answer.text}`)
        if (turn.report?.restored?.source !== variant) throw new Error(`expected a ${variant} restore`)
        await turn.end()
      }
    }

    const tree = await measureTreeRestores(managers, ids, toTurn, rewinds)

    const stats = {
      ...tree.stats,
      endOff: summary(endMs.off),
      endSnapshot: summary(endMs.snapshot),
      endJournal: summary(endMs.journal),
      checkpoint: summary(checkpointMs),
      readySnapshot: summary(ready.snapshot),
      readyJournal: summary(ready.journal),
      rewindSnapshot: summary(rewindMs.snapshot),
      rewindJournal: summary(rewindMs.journal),
    }
    const ratio = (a, b) => `${(a / b).toFixed(2)}×`
    log(
      table(
        ['turn end (same workload)', 'p50', 'p95', 'vs off at p50'],
        [
          ['checkpoints off', ms(stats.endOff.p50), ms(stats.endOff.p95), '1.00×'],
          [
            'checkpoints on, local-e2b snapshot per turn',
            ms(stats.endSnapshot.p50),
            ms(stats.endSnapshot.p95),
            ratio(stats.endSnapshot.p50, stats.endOff.p50),
          ],
          [
            'checkpoints on, journal position only (no snapshots)',
            ms(stats.endJournal.p50),
            ms(stats.endJournal.p95),
            ratio(stats.endJournal.p50, stats.endOff.p50),
          ],
        ],
      ),
    )
    const perCheckpoint = dirBytes / Math.max(1, turns)
    const eventMean = eventBytes.length
      ? eventBytes.reduce((a, b) => a + b, 0) / eventBytes.length
      : Number.NaN
    log(
      `\nsnapshot call in the turn end: p50 ${ms(stats.checkpoint.p50)}, p95 ${ms(stats.checkpoint.p95)}.` +
        `\ndisk per checkpoint: ${(perCheckpoint / 1048576).toFixed(2)} MiB (snapshots/ grew to ${(dirBytes / 1048576).toFixed(1)} MiB over ${turns} checkpoints; snapshot-create events say ${(eventMean / 1048576).toFixed(2)} MiB each).\n`,
    )
    log(
      table(
        [
          `rewind to turn ${toTurn} of ${turns}, then the first tool call`,
          'rewind p50',
          'ready p50',
          'ready p95',
        ],
        [
          [
            'from the snapshot (files copied, memory from the journal’s code)',
            ms(stats.rewindSnapshot.p50),
            ms(stats.readySnapshot.p50),
            ms(stats.readySnapshot.p95),
          ],
          [
            'fresh sandbox + whole journal replayed',
            ms(stats.rewindJournal.p50),
            ms(stats.readyJournal.p50),
            ms(stats.readyJournal.p95),
          ],
        ],
      ),
    )
    log(
      `\njournal replay / snapshot restore at p50: ${ratio(stats.readyJournal.p50, stats.readySnapshot.p50)} (journal of ${toTurn * 2} steps, ${toTurn} files of ${FILE_BYTES / 1024} KiB). ${turns} turns per variant, ${rewinds} rewinds per variant, round-robin; isolation ${host.isolation}.`,
    )
    log(treeTable(stats, toTurn))
    log(
      `\njournal entries of the two siblings and the parent: ${tree.journalLengths.join(', ')}; ${rewinds} rounds of sibling, sibling, parent per variant.`,
    )
    return {
      turns,
      rewinds,
      toTurn,
      isolation: host.isolation,
      diskBytesPerCheckpoint: perCheckpoint,
      snapshotEventBytesMean: eventMean,
      ...stats,
    }
  } finally {
    for (const [variant, id] of Object.entries(ids)) await managers[variant].endSession(id).catch(() => false)
    await store.close()
    await host.close()
    await rm(stateDir, { recursive: true, force: true })
  }
}
