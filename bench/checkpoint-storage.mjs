// What a checkpoint costs on local-e2b with snapshots stored by content (the default) vs whole copies of the
// sandbox's disk (`snapshotStorage: 'copy'`, the format before), side by side in one run: two hosts in this
// process, the same workspace and the same turns, round-robin. Each turn changes one 1 KiB file and ends with
// a checkpoint (a snapshot); then rewinds restore a kept checkpoint and the next turn's first command answers.
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createMemorySessionStore, createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { startLocalE2B } from '@sandkeep/local-e2b'
import { ms, summary, table } from './stats.mjs'

/** A small agent workspace: 100 source files of 1-5 KiB (base64 text) and a 1 MiB artifact. */
const WORKSPACE = [
  'mkdir -p /home/user/project/src',
  'for i in $(seq 1 100); do head -c $((768 * (1 + i % 5))) /dev/urandom | base64 > /home/user/project/src/file$i.txt; done',
  'head -c 1048576 /dev/urandom > /home/user/project/artifact.bin',
].join(' && ')

/** Bytes a directory takes on disk (allocated, as the host counts its snapshots). */
function diskBytes(path) {
  return Number(execFileSync('du', ['-s', '--block-size=1', path], { encoding: 'utf8' }).split('\t')[0])
}

const KiB = 1024
const kib = (bytes) => `${(bytes / KiB).toFixed(1)} KiB`

export async function runCheckpointStorage({ turns = 20, rewinds = 6, keep = 10, log = console.log } = {}) {
  const variants = ['copy', 'content']
  const setups = {}
  for (const storage of variants) {
    const stateDir = await mkdtemp(join(tmpdir(), `sandkeep-bench-ckpt-${storage}-`))
    const host = await startLocalE2B({
      pauseMode: 'memory',
      stateDir,
      logger: () => {},
      snapshotStorage: storage,
    })
    const provider = createE2BProvider({
      apiKey: host.apiKey,
      apiUrl: host.apiUrl,
      sandboxUrl: host.sandboxUrl,
      snapshots: { keepsMemory: false },
    })
    const store = createMemorySessionStore()
    const sessions = createSessionManager({ store, provider, checkpoints: { every: 'turn', keep } })
    setups[storage] = { stateDir, host, store, sessions, id: `bench-${randomUUID()}` }
  }
  const samples = Object.fromEntries(
    variants.map((v) => [
      v,
      { end: [], checkpoint: [], create: [], frozen: [], bytes: [], ready: [], rewind: [] },
    ]),
  )
  try {
    for (const storage of variants) {
      const { sessions, id } = setups[storage]
      const turn = await sessions.beginTurn(id)
      await turn.sandbox.runCommand(WORKSPACE)
      await turn.end()
    }
    // A user's think time between turns: the files a turn wrote are older than a file time tick by the next end.
    const think = () => new Promise((resolve) => setTimeout(resolve, 100))
    for (let n = 1; n <= turns; n++) {
      for (const storage of n % 2 === 0 ? variants : [...variants].reverse()) {
        const { sessions, id, host } = setups[storage]
        const turn = await sessions.beginTurn(id)
        await turn.sandbox.writeFile(
          '/home/user/project/src/file7.txt',
          `${String(n).padStart(7, '0')}\n`.repeat(128),
        )
        await think()
        const started = performance.now()
        const end = await turn.end()
        samples[storage].end.push(performance.now() - started)
        if (end.error) throw new Error(`${storage} turn end failed: ${JSON.stringify(end.error)}`)
        samples[storage].checkpoint.push(end.timings.checkpointMs ?? 0)
        const created = host.events.list({ type: 'snapshot-create' }).at(-1)?.detail ?? {}
        samples[storage].create.push(created.createMs)
        samples[storage].frozen.push(created.frozenMs)
        samples[storage].bytes.push(created.bytes)
      }
    }
    const kept = Object.fromEntries(
      variants.map((storage) => [storage, diskBytes(join(setups[storage].stateDir, 'snapshots'))]),
    )
    // Rewinds to a kept checkpoint, then the first command of the next turn: the restore a user waits for.
    // Late enough that the checkpoints the rewinds' own turns add never prune it.
    const toTurn = Math.max(2, turns - 1)
    for (let r = 0; r < rewinds; r++) {
      for (const storage of r % 2 === 0 ? variants : [...variants].reverse()) {
        const { sessions, id } = setups[storage]
        let started = performance.now()
        const rewound = await sessions.rewind(id, { toTurn })
        samples[storage].rewind.push(performance.now() - started)
        if (rewound.source !== 'snapshot')
          throw new Error(`${storage}: expected a snapshot rewind, got ${rewound.source}`)
        started = performance.now()
        const turn = await sessions.beginTurn(id)
        const read = await turn.sandbox.runCommand('head -c 8 /home/user/project/src/file7.txt')
        samples[storage].ready.push(performance.now() - started)
        // The turn-end checkpoint of turn toTurn (the workspace's turn 0 is the first one).
        if (
          read.stdout !==
          String(toTurn - 1)
            .padStart(7, '0')
            .concat('\n')
        )
          throw new Error(`${storage}: the rewind restored ${JSON.stringify(read.stdout)}`)
        await turn.end()
      }
    }
    const stats = Object.fromEntries(
      variants.map((storage) => [
        storage,
        Object.fromEntries(Object.entries(samples[storage]).map(([name, values]) => [name, summary(values)])),
      ]),
    )
    const ratio = (name) => `${(stats.content[name].p50 / stats.copy[name].p50).toFixed(2)}×`
    const row = (label, name, format = ms) => [
      label,
      format(stats.copy[name].p50),
      format(stats.content[name].p50),
      format(stats.content[name].p95),
      ratio(name),
    ]
    log(
      table(
        ['one 1 KiB file changed per turn', 'copy p50', 'content p50', 'content p95', 'content / copy'],
        [
          row('turn end (checkpoint + pause)', 'end'),
          row('snapshot call in the turn end', 'checkpoint'),
          row("host's snapshot create", 'create'),
          row('sandbox frozen', 'frozen'),
          row('new disk per checkpoint', 'bytes', kib),
          row(`rewind to turn ${toTurn}`, 'rewind'),
          row('then the first command answers', 'ready'),
        ],
      ),
    )
    log(
      `\nsnapshots/ after ${turns} turns (${keep} checkpoints kept): copy ${kib(kept.copy)}, content ${kib(kept.content)}. ` +
        `${turns} turns and ${rewinds} rewinds per variant, round-robin; isolation ${setups.content.host.isolation}.`,
    )
    return { turns, rewinds, keep, isolation: setups.content.host.isolation, keptBytes: kept, ...stats }
  } finally {
    for (const storage of variants) {
      const { sessions, id, store, host, stateDir } = setups[storage]
      await sessions.endSession(id).catch(() => false)
      await store.close()
      await host.close()
      await rm(stateDir, { recursive: true, force: true })
    }
  }
}
