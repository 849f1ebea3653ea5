// What snapshots and forks cost, through the real e2b SDK against an embedded host: createSnapshot (and how
// long the source stands frozen), the bytes a snapshot takes on disk, Sandbox.create(snapshotId) until the
// first command answers, fork, and deleteSnapshot. The sandbox is a typical agent workspace: 100 small source
// files and one 5 MiB artifact (`--written-mb` changes the artifact). Imports the BUILT package: run
// `pnpm --filter @sandkeep/local-e2b build` first.
// Usage: node bench/snapshots.mjs [--runs 20] [--written-mb 5] [--json]

import { Sandbox } from 'e2b'
import { startLocalE2B } from '../dist/index.js'
import { printRows, summary, timed } from './stats.mjs'

const args = process.argv.slice(2)
const option = (name, fallback) => {
  const index = args.indexOf(name)
  return index === -1 ? fallback : Number(args[index + 1]) || fallback
}
const runs = option('--runs', 20)
const writtenMb = option('--written-mb', 5)
const asJson = args.includes('--json')

const host = await startLocalE2B({ logger: () => {} })
const opts = { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }
const samples = {
  snapshot: [],
  frozen: [],
  bytes: [],
  create: [],
  restoreCopy: [],
  firstCommand: [],
  fork: [],
  forkFrozen: [],
  remove: [],
  emptyBytes: [],
}
const last = (type) => host.events.list({ type }).at(-1)?.detail ?? {}
try {
  const workspace = [
    'mkdir -p /home/user/project/src',
    'for i in $(seq 1 100); do head -c 4096 /dev/urandom | base64 > /home/user/project/src/file$i.txt; done',
    `head -c ${writtenMb * 1024 * 1024} /dev/urandom > /home/user/project/artifact.bin`,
  ].join(' && ')
  for (let run = 0; run < runs + 2; run++) {
    const measured = run >= 2 // the first two warm up the SDK's connections and the JIT
    const empty = await Sandbox.create(opts)
    const { snapshotId: emptyId } = await empty.createSnapshot()
    if (measured) samples.emptyBytes.push(last('snapshot-create').bytes)
    await Sandbox.deleteSnapshot(emptyId, opts)
    await empty.kill()

    const source = await Sandbox.create(opts)
    await source.commands.run(workspace)
    const [snapshotMs, snapshot] = await timed(() => source.createSnapshot())
    const created = last('snapshot-create')
    const [createMs, copy] = await timed(() => Sandbox.create(snapshot.snapshotId, opts))
    const restored = last('snapshot-restore')
    const [commandMs] = await timed(() => copy.commands.run('test -s /home/user/project/artifact.bin'))
    const [forkMs, forks] = await timed(() => source.fork({ count: 1, timeoutMs: 60_000 }))
    const forked = last('sandbox-fork')
    const [removeMs] = await timed(() => Sandbox.deleteSnapshot(snapshot.snapshotId, opts))
    if (measured) {
      samples.snapshot.push(snapshotMs)
      samples.frozen.push(created.frozenMs)
      samples.bytes.push(created.bytes)
      samples.create.push(createMs)
      samples.restoreCopy.push(restored.copyMs)
      samples.firstCommand.push(createMs + commandMs)
      samples.fork.push(forkMs)
      samples.forkFrozen.push(forked.frozenMs)
      samples.remove.push(removeMs)
    }
    for (const fork of forks) if (fork instanceof Sandbox) await fork.kill()
    await copy.kill()
    await source.kill()
  }
} finally {
  await host.close()
}

const MiB = 1024 * 1024
const rows = [
  summary('createSnapshot (SDK round trip)', samples.snapshot),
  summary('  of which: the source stands frozen', samples.frozen),
  summary('Sandbox.create(snapshotId) (SDK round trip)', samples.create),
  summary('  of which: copying the snapshot disk', samples.restoreCopy),
  summary('Sandbox.create(snapshotId) until a first command answered', samples.firstCommand),
  summary('fork({ count: 1 }) (SDK round trip)', samples.fork),
  summary('  of which: the source stands frozen', samples.forkFrozen),
  summary('deleteSnapshot (SDK round trip)', samples.remove),
  summary(
    'snapshot on disk, this workspace (MiB)',
    samples.bytes.map((bytes) => bytes / MiB),
  ),
  summary(
    'snapshot on disk, a new empty sandbox (MiB)',
    samples.emptyBytes.map((bytes) => bytes / MiB),
  ),
]
printRows(rows, {
  asJson,
  info: { package: '@sandkeep/local-e2b', bench: 'snapshots', runs, writtenMb, isolation: host.isolation },
  title: `@sandkeep/local-e2b snapshots: ${runs} runs, workspace of 100 files + ${writtenMb} MiB, isolation ${host.isolation} (ms unless MiB)`,
  nameWidth: 60,
})
