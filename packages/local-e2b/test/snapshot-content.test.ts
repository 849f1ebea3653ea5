// Snapshots stored by content, through the unmodified e2b SDK: a checkpoint reads and keeps only what changed
// since the sandbox's previous one, content is kept once across checkpoints, forks and sandboxes made from a
// snapshot, the limits count a shared blob once, a delete frees only what nothing else uses, snapshots of the
// format before stay readable, and what a crash leaves behind is swept, never trusted.
import { createHash, randomBytes } from 'node:crypto'
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startTestHost, stopTestHost, type TestHost, useTestHost } from './helpers.js'

const KiB = 1024
const MiB = 1024 * KiB

/** A small agent workspace: 100 source files of 1-5 KiB and a 2 MiB artifact of random bytes. */
const WORKSPACE = [
  'mkdir -p /home/user/project/src',
  'for i in $(seq 1 100); do head -c $((1024 * (1 + i % 5))) /dev/urandom | base64 > /home/user/project/src/file$i.txt; done',
  'head -c 2097152 /dev/urandom > /home/user/project/artifact.bin',
].join(' && ')

/** The detail of the host's last snapshot-create event. */
function lastCreate(t: TestHost): { bytes: number; kind: string; filesRead?: number; newBlobs?: number } {
  const detail = t.host.events.list({ type: 'snapshot-create' }).at(-1)?.detail
  return detail as { bytes: number; kind: string; filesRead?: number; newBlobs?: number }
}

/** Every blob file the host keeps. */
function blobFiles(stateDir: string): string[] {
  const blobs = join(stateDir, 'snapshots', 'blobs')
  return readdirSync(blobs, { withFileTypes: true }).flatMap((prefix) =>
    prefix.isDirectory()
      ? readdirSync(join(blobs, prefix.name)).map((name) => join(blobs, prefix.name, name))
      : [join(blobs, prefix.name)],
  )
}

/** sha256 of a file inside the sandbox, as sha256sum prints it. */
async function sumOf(sandbox: Sandbox, path: string): Promise<string> {
  return (await sandbox.commands.run(`sha256sum ${path} | cut -d' ' -f1`)).stdout.trim()
}

/** File times tick coarsely: a file written right before a capture is read again by the next one. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 150))

describe('content snapshots', () => {
  const t = useTestHost()
  const created: string[] = []
  afterEach(async () => {
    for (const id of created.splice(0)) await Sandbox.kill(id, t.opts).catch(() => {})
    const paginator = Sandbox.listSnapshots(t.opts)
    while (paginator.hasNext)
      for (const snapshot of await paginator.nextItems())
        await Sandbox.deleteSnapshot(snapshot.snapshotId, t.opts)
  })
  async function create(template?: string) {
    const sandbox = template ? await Sandbox.create(template, t.opts) : await Sandbox.create(t.opts)
    created.push(sandbox.sandboxId)
    return sandbox
  }

  it('a turn that changed one 1 KB file reads one file and keeps under 64 KiB anew', async () => {
    const source = await create()
    await source.commands.run(WORKSPACE)
    await settle()
    const first = await source.createSnapshot()
    expect(lastCreate(t).kind).toBe('content')
    expect(lastCreate(t).bytes).toBeGreaterThan(2 * MiB)
    await settle()
    await source.files.write('/home/user/project/src/file7.txt', 'x'.repeat(1024))
    const second = await source.createSnapshot()
    const detail = lastCreate(t)
    expect(detail.newBlobs).toBe(1)
    expect(detail.filesRead).toBe(1)
    expect(detail.bytes).toBeLessThanOrEqual(64 * KiB)
    // Each snapshot still holds its own state.
    const before = await create(first.snapshotId)
    const after = await create(second.snapshotId)
    expect((await before.files.read('/home/user/project/src/file7.txt')).length).not.toBe(1024)
    expect(await after.files.read('/home/user/project/src/file7.txt')).toBe('x'.repeat(1024))
    expect(await sumOf(after, '/home/user/project/artifact.bin')).toBe(
      await sumOf(source, '/home/user/project/artifact.bin'),
    )
  })

  it('content is kept once across checkpoints, forks and sandboxes made from a snapshot', async () => {
    const source = await create()
    await source.commands.run(WORKSPACE)
    const first = await source.createSnapshot()
    const [fork] = await source.fork({ count: 1, timeoutMs: 60_000 })
    if (!(fork instanceof Sandbox)) throw fork
    created.push(fork.sandboxId)
    await fork.files.write('/home/user/fork.txt', 'only in the fork')
    await fork.createSnapshot()
    // The fork's first checkpoint reads its files (new inodes) but writes only what is new.
    expect(lastCreate(t).newBlobs).toBeLessThanOrEqual(2)
    expect(lastCreate(t).bytes).toBeLessThanOrEqual(64 * KiB)
    const restored = await create(first.snapshotId)
    await restored.createSnapshot()
    expect(lastCreate(t).bytes).toBeLessThanOrEqual(64 * KiB)
  })

  it('a delete frees only the blobs no other snapshot uses', async () => {
    const source = await create()
    await source.commands.run(WORKSPACE)
    const sum = await sumOf(source, '/home/user/project/artifact.bin')
    const first = await source.createSnapshot()
    await source.files.write('/home/user/second.txt', 'second')
    const second = await source.createSnapshot()
    const blobs = blobFiles(t.host.stateDir).length
    expect(await Sandbox.deleteSnapshot(first.snapshotId, t.opts)).toBe(true)
    // Everything the first held is also the second's.
    expect(blobFiles(t.host.stateDir)).toHaveLength(blobs)
    const copy = await create(second.snapshotId)
    expect(await sumOf(copy, '/home/user/project/artifact.bin')).toBe(sum)
    expect(await copy.files.read('/home/user/second.txt')).toBe('second')
    expect(await Sandbox.deleteSnapshot(second.snapshotId, t.opts)).toBe(true)
    expect(blobFiles(t.host.stateDir)).toEqual([])
    expect(readdirSync(join(t.host.stateDir, 'snapshots', 'manifests'))).toEqual([])
  })

  it('a checkpoint after a 120 MiB file was deleted costs what the disk still holds', async () => {
    const source = await create()
    await source.commands.run('head -c 125829120 /dev/urandom > /home/user/big.bin', { timeoutMs: 120_000 })
    const big = await source.createSnapshot()
    expect(lastCreate(t).bytes).toBeGreaterThan(120 * MiB)
    await source.commands.run('rm /home/user/big.bin')
    const small = await source.createSnapshot()
    expect(lastCreate(t).bytes).toBeLessThan(MiB)
    await Sandbox.deleteSnapshot(big.snapshotId, t.opts)
    const kept = blobFiles(t.host.stateDir).reduce((sum, file) => sum + statSync(file).blocks * 512, 0)
    expect(kept).toBeLessThan(MiB)
    await Sandbox.deleteSnapshot(small.snapshotId, t.opts)
  })

  it('keeps modes, links, hard links, sparse files and paths past 4,096 bytes', async () => {
    const source = await create()
    const deep = 'd'.repeat(250)
    await source.commands.run(
      [
        'cd /home/user && mkdir -p tree && cd tree',
        'echo secret > private.txt && chmod 0640 private.txt',
        'mkdir shared && chmod 0751 shared',
        'ln -s private.txt link && ln private.txt hard',
        'truncate -s 1G sparse.img && printf end | dd of=sparse.img bs=1 seek=1073741821 conv=notrunc status=none',
        `for i in $(seq 20); do mkdir ${deep} && cd ${deep}; done && echo deep > deep.txt`,
      ].join(' && '),
    )
    await source.createSnapshot().then(async ({ snapshotId }) => {
      // A 1 GiB file of holes takes blocks for what it holds, not its size.
      expect(lastCreate(t).bytes).toBeLessThan(4 * MiB)
      const copy = await create(snapshotId)
      const stat = await copy.commands.run(
        "cd /home/user/tree && stat -c '%n %a %h %F' private.txt shared link hard && readlink link && du -k sparse.img | cut -f1 && stat -c %s sparse.img && tail -c 3 sparse.img",
      )
      const lines = stat.stdout.trim().split('\n')
      expect(lines.slice(0, 4)).toEqual([
        'private.txt 640 2 regular file',
        'shared 751 2 directory',
        'link 777 1 symbolic link',
        'hard 640 2 regular file',
      ])
      expect(lines[4]).toBe('private.txt')
      expect(Number(lines[5])).toBeLessThan(1024)
      expect(lines[6]).toBe(String(1024 * MiB))
      expect(lines[7]).toBe('end')
      const read = await copy.commands.run(
        `cd /home/user/tree && for i in $(seq 20); do cd ${deep}; done && cat deep.txt && echo more >> deep.txt && echo ok`,
      )
      expect(read.stdout).toBe('deep\nok\n')
    })
  })

  it('counts a blob its snapshots share once against the bytes limit', async () => {
    const limited = await startTestHost({ maxSnapshotBytes: 6 * MiB })
    try {
      const source = await Sandbox.create(limited.opts)
      await source.commands.run(WORKSPACE)
      // Five checkpoints of a 2.4 MiB workspace: 12 MiB as whole copies, one workspace and four changes here.
      for (let turn = 0; turn < 5; turn++) {
        await source.files.write('/home/user/turn.txt', `turn ${turn}`)
        await source.createSnapshot()
      }
      await source.commands.run('head -c 5242880 /dev/urandom > /home/user/more.bin')
      await expect(source.createSnapshot()).rejects.toThrow(/^507: snapshot quota exceeded/)
    } finally {
      await stopTestHost(limited)
    }
  })
})

describe('content snapshots across host restarts', () => {
  let stateDir = ''
  const apiKey = `e2b_${randomBytes(20).toString('hex')}`
  beforeAll(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'sandkeep-content-snapshots-'))
  })
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }))

  it('snapshots of the format before (whole copies) stay readable and deletable', async () => {
    const old = await startTestHost({ stateDir, apiKey, snapshotStorage: 'copy' })
    let snapshotId = ''
    try {
      const source = await Sandbox.create(old.opts)
      await source.files.write('/home/user/old.txt', 'from the format before')
      snapshotId = (await source.createSnapshot()).snapshotId
      expect(lastCreate(old).kind).not.toBe('content')
    } finally {
      await stopTestHost(old)
    }
    const current = await startTestHost({ stateDir, apiKey })
    try {
      const copy = await Sandbox.create(snapshotId, current.opts)
      expect(await copy.files.read('/home/user/old.txt')).toBe('from the format before')
      await copy.createSnapshot()
      expect(lastCreate(current).kind).toBe('content')
      expect(await Sandbox.deleteSnapshot(snapshotId, current.opts)).toBe(true)
      const left = readdirSync(join(stateDir, 'snapshots')).filter(
        (name) => !['index.json', 'blobs', 'manifests'].includes(name),
      )
      expect(left).toEqual([])
    } finally {
      await stopTestHost(current)
    }
  })

  it('what an interrupted snapshot left is swept, and a cut-short blob is never trusted', async () => {
    const first = await startTestHost({ stateDir, apiKey })
    let snapshotId = ''
    const content = `kept ${randomBytes(8).toString('hex')}`
    const hash = createHash('sha256').update(content).digest('hex')
    try {
      const source = await Sandbox.create(first.opts)
      await source.files.write('/home/user/kept.txt', content)
      snapshotId = (await source.createSnapshot()).snapshotId
    } finally {
      await stopTestHost(first)
    }
    const blobs = join(stateDir, 'snapshots', 'blobs')
    // A crash mid-write (a temp blob), after a blob but before the index (an orphan blob and manifest), and a
    // power cut that left a kept blob short.
    writeFileSync(join(blobs, '.tmp-0123456789abcdef'), 'half')
    mkdirSync(join(blobs, 'ff'), { recursive: true })
    const orphan = join(blobs, 'ff', 'f'.repeat(64))
    writeFileSync(orphan, 'orphan')
    const orphanManifest = join(stateDir, 'snapshots', 'manifests', 'orphan.json')
    writeFileSync(orphanManifest, '{"version":1,"entries":[]}')
    const kept = join(blobs, hash.slice(0, 2), hash)
    expect(readFileSync(kept, 'utf8')).toBe(content)
    truncateSync(kept, 3)
    const lines: string[] = []
    const second = await startTestHost({ stateDir, apiKey, logger: (line) => lines.push(line) })
    try {
      expect(lines.some((line) => line.includes('cut-short') && line.includes(snapshotId))).toBe(true)
      const listed = await Sandbox.listSnapshots(second.opts).nextItems()
      expect(listed.map((snapshot) => snapshot.snapshotId)).not.toContain(snapshotId)
      expect(blobFiles(stateDir)).not.toContain(orphan)
      expect(blobFiles(stateDir)).not.toContain(kept)
      expect(readdirSync(blobs)).not.toContain('.tmp-0123456789abcdef')
      expect(readdirSync(join(stateDir, 'snapshots', 'manifests'))).not.toContain('orphan.json')
      // The same content snapshotted again gets a whole blob of its own.
      const source = await Sandbox.create(second.opts)
      await source.files.write('/home/user/kept.txt', content)
      const { snapshotId: again } = await source.createSnapshot()
      expect(readFileSync(kept, 'utf8')).toBe(content)
      const copy = await Sandbox.create(again, second.opts)
      expect(await copy.files.read('/home/user/kept.txt')).toBe(content)
    } finally {
      await stopTestHost(second)
    }
  })
})
