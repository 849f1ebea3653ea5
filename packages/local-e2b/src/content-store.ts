// Snapshots stored by content. Each file's bytes are kept once, as a blob named by their sha256
// (snapshots/blobs/<2 hex>/<64 hex>, holes kept as holes), and each snapshot is a manifest
// (snapshots/manifests/<file>) listing every entry of the sandbox's disk: path, type, mode, owner, times, and
// the blob of a file, the target of a link, the first path of a hard-linked inode. A file unchanged since the
// sandbox's previous capture (same inode, size, mtime and ctime, to the nanosecond) is not even read again; one
// whose content some kept snapshot already holds (another checkpoint, a fork, another sandbox) is not written
// again. Nothing is trusted that a crash could have left half written: a blob or manifest appears only by
// rename of a complete temp file, and a blob counts only once a committed snapshot (or a capture in progress)
// holds it; whatever else is found at load (temp files, blobs no kept manifest names) is swept. A delete frees
// the blobs that no kept snapshot and no capture in progress uses, counted per blob.

import { execFileSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import {
  type BigIntStats,
  closeSync,
  existsSync,
  fchmodSync,
  fchownSync,
  constants as fsConstants,
  fstatSync,
  ftruncateSync,
  futimesSync,
  lchownSync,
  linkSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'

/** Bytes read or written at once. */
const CHUNK_BYTES = 1 << 20
/** A run of zeros this long (and aligned) is left as a hole rather than written. */
const HOLE_BYTES = 64 << 10
/** A file at most this big is read whole, hashed, and written only when its blob is new. */
const SMALL_FILE_BYTES = CHUNK_BYTES
/**
 * A file changed this close before a capture began is captured but not remembered as unchanged: the
 * kernel's file times tick coarsely (a jiffy), so a write right after the capture could leave them equal.
 */
const RACY_NS = 50_000_000n
/** A path past this many bytes is reached from an fd of an ancestor (the kernel refuses 4,096 and more). */
const LONG_PATH_BYTES = 2048

/** Entry types of a manifest: directory, file, symlink, hard link (to an earlier file), fifo. */
type EntryType = 'd' | 'f' | 'l' | 'h' | 'p'

/** One entry of a manifest (short keys: a manifest lists every entry of the disk). */
export interface ManifestEntry {
  /** Path under the disk's top (`''` for the top), when it is valid UTF-8. */
  p?: string
  /** The same path as base64 of its bytes, when it is not. */
  pb?: string
  t: EntryType
  /** Mode bits (permissions, setuid/setgid/sticky). */
  m: number
  u: number
  g: number
  /** mtime and atime, ns since the epoch, as decimal strings. */
  mt: string
  at: string
  /** File size (bytes). */
  s?: number
  /** sha256 of the file's content. */
  b?: string
  /** Symlink target, base64 of its bytes. */
  l?: string
  /** Hard link: the index of the entry of the inode's first path. */
  h?: number
  /** What tells an unchanged file at the next capture: inode, ctime ns (absent when captured racy). */
  i?: string
  c?: string
}

/** A manifest as written to disk. */
export interface Manifest {
  version: 1
  /** Bytes of the content (apparent sizes of all files), for reports. */
  contentBytes: number
  entries: ManifestEntry[]
}

/** What a capture took and what it found. */
export interface Capture {
  manifest: Manifest
  /** Blobs this capture wrote (not held by anything before it). */
  newBlobs: number
  /** Files read (changed or not known from the previous capture). */
  filesRead: number
  /** Entries that could not be read (sockets and devices are skipped silently, not counted). */
  errors: Error[]
  /** Lets go of the blobs the capture holds: call once it was committed or given up. */
  release: () => void
  /** What it saw of each file, for the sandbox's next capture (see {@link ContentStore.remember}). */
  memory: FileMemory
}

/** The relative path of an entry as bytes. */
function pathBytes(entry: ManifestEntry): Buffer {
  return entry.pb !== undefined ? Buffer.from(entry.pb, 'base64') : Buffer.from(entry.p ?? '', 'utf8')
}

function setPath(entry: ManifestEntry, path: Buffer): void {
  const text = path.toString('utf8')
  if (Buffer.from(text, 'utf8').equals(path)) entry.p = text
  else entry.pb = path.toString('base64')
}

const SLASH = Buffer.from('/')

function childOf(dir: Buffer, name: Buffer): Buffer {
  return dir.length === 0 ? name : Buffer.concat([dir, SLASH, name])
}

/**
 * Turns paths under a top directory into paths the kernel accepts, however deep: a path past
 * {@link LONG_PATH_BYTES} goes through `/proc/self/fd/<fd>` of an ancestor directory opened without
 * following links. Close it to close those fds.
 */
class ShortPaths {
  readonly #top: Buffer
  readonly #anchors = new Map<string, { fd: number; path: Buffer }>()

  constructor(top: string) {
    this.#top = Buffer.from(top)
  }

  /** Closes the fds once they are many (between entries: no path handed out before is in use then). */
  trim(): void {
    if (this.#anchors.size >= 256) this.close()
  }

  /** A usable path of `relative` (bytes under the top; empty = the top). */
  of(relative: Buffer): Buffer {
    let base = this.#top
    let rest = relative
    let consumed = 0
    while (base.length + 1 + rest.length > LONG_PATH_BYTES) {
      // Cut at the last slash that keeps the anchor's own path short, and anchor at that directory.
      let cut = rest.lastIndexOf(SLASH, LONG_PATH_BYTES - base.length - 2)
      if (cut <= 0) cut = rest.indexOf(SLASH)
      if (cut <= 0) break
      const key = relative.subarray(0, consumed + cut).toString('base64')
      let anchor = this.#anchors.get(key)
      if (!anchor) {
        const fd = openSync(
          Buffer.concat([base, SLASH, rest.subarray(0, cut)]),
          fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW,
        )
        anchor = { fd, path: Buffer.from(`/proc/self/fd/${fd}`) }
        this.#anchors.set(key, anchor)
      }
      base = anchor.path
      consumed += cut + 1
      rest = rest.subarray(cut + 1)
    }
    return rest.length === 0 ? base : Buffer.concat([base, SLASH, rest])
  }

  close(): void {
    for (const anchor of this.#anchors.values()) closeSync(anchor.fd)
    this.#anchors.clear()
  }
}

/** True when `buffer[start, end)` holds only zeros. */
function isZero(buffer: Buffer, start: number, end: number): boolean {
  for (let index = start; index < end; index++) if (buffer[index] !== 0) return false
  return true
}

/** Writes `length` bytes of `buffer` at `position`, leaving aligned runs of zeros as holes. */
function writeSparse(fd: number, buffer: Buffer, length: number, position: number): void {
  for (let start = 0; start < length; start += HOLE_BYTES) {
    const end = Math.min(start + HOLE_BYTES, length)
    if (isZero(buffer, start, end)) continue
    let written = 0
    while (written < end - start)
      written += writeSync(fd, buffer, start + written, end - start - written, position + start + written)
  }
}

/** Copies a file's content to an open fd, holes kept, and sets its size (`buffer`: scratch space). */
function copyContent(from: Buffer | string, toFd: number, size: number, buffer: Buffer): void {
  const fromFd = openSync(from, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW)
  try {
    let position = 0
    for (;;) {
      const read = readSync(fromFd, buffer, 0, CHUNK_BYTES, position)
      if (read === 0) break
      writeSparse(toFd, buffer, read, position)
      position += read
      if (position >= size) break
    }
    // Only a trailing hole leaves the file short of its size.
    if (position !== size || fstatSync(toFd).size !== size) ftruncateSync(toFd, position)
  } finally {
    closeSync(fromFd)
  }
}

/** Deletes a tree, however long its paths (rm walks relative to each directory; Node's rmSync does not). */
export function removeTree(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true })
  } catch {
    execFileSync('rm', ['-rf', '--', path], { stdio: 'ignore', timeout: 10 * 60_000 })
  }
}

/** What the previous capture of a sandbox saw of each file: path (base64) → inode, size, times, blob. */
export type FileMemory = Map<
  string,
  { ino: bigint; size: bigint; mtime: bigint; ctime: bigint; blob: string }
>

export class ContentStore {
  readonly #blobs: string
  readonly #manifests: string
  readonly #logger: (line: string) => void
  /** Blob → how many kept manifests name it. */
  readonly #references = new Map<string, number>()
  /** Blob → how many captures in progress (or not yet committed) hold it. */
  readonly #pins = new Map<string, number>()
  /** Blob → bytes it takes on disk (allocated). */
  readonly #sizes = new Map<string, number>()
  /** Sandbox id → what its previous capture saw. */
  readonly #memory = new Map<string, FileMemory>()

  constructor(snapshotsDir: string, logger: (line: string) => void) {
    this.#blobs = join(snapshotsDir, 'blobs')
    this.#manifests = join(snapshotsDir, 'manifests')
    this.#logger = logger
  }

  /** Where the blob of `hash` is. */
  blobPath(hash: string): string {
    return join(this.#blobs, hash.slice(0, 2), hash)
  }

  manifestPath(file: string): string {
    return join(this.#manifests, file)
  }

  /** Bytes the blob takes on disk (0 when unknown). */
  blobBytes(hash: string): number {
    return this.#sizes.get(hash) ?? 0
  }

  /** The distinct blobs a manifest names. */
  static blobsOf(manifest: Manifest): Set<string> {
    const blobs = new Set<string>()
    for (const entry of manifest.entries) if (entry.b) blobs.add(entry.b)
    return blobs
  }

  /**
   * Reads the kept manifests (`files`), counts their blobs, and sweeps everything else: temp files, manifests
   * and blobs nothing kept names. Returns the manifests read, and the files whose manifest or blobs are
   * missing or cut short (their snapshots cannot be restored).
   */
  load(files: string[]): { manifests: Map<string, Manifest>; broken: Set<string> } {
    for (const dir of [this.#blobs, this.#manifests]) mkdirSync(dir, { recursive: true, mode: 0o700 })
    const manifests = new Map<string, Manifest>()
    const broken = new Set<string>()
    for (const file of files) {
      try {
        const manifest = JSON.parse(readFileSync(this.manifestPath(file), 'utf8')) as Manifest
        if (manifest.version !== 1 || !Array.isArray(manifest.entries)) throw new Error('not a manifest')
        manifests.set(file, manifest)
      } catch {
        broken.add(file)
      }
    }
    // A blob whose size is not what a manifest says was cut short (a crash before its data reached the disk).
    const checked = new Map<string, boolean>()
    for (const [file, manifest] of manifests) {
      for (const entry of manifest.entries) {
        if (!entry.b) continue
        let good = checked.get(entry.b)
        if (good === undefined) {
          try {
            const stats = statSync(this.blobPath(entry.b))
            good = stats.size === entry.s
            if (good) this.#sizes.set(entry.b, stats.blocks * 512)
          } catch {
            good = false
          }
          checked.set(entry.b, good)
        }
        if (!good) broken.add(file)
      }
    }
    for (const file of broken) manifests.delete(file)
    for (const manifest of manifests.values()) this.#reference(manifest, 1)
    this.#sweep(new Set(manifests.keys()))
    return { manifests, broken }
  }

  /** Deletes temp files and whatever no kept manifest names (at load: no capture is in progress). */
  #sweep(keptManifests: Set<string>): void {
    let swept = 0
    for (const name of readdirSync(this.#manifests)) {
      if (keptManifests.has(name)) continue
      rmSync(join(this.#manifests, name), { force: true })
      swept++
    }
    for (const prefix of readdirSync(this.#blobs, { withFileTypes: true })) {
      const dir = join(this.#blobs, prefix.name)
      if (!prefix.isDirectory()) {
        // A temp blob a capture never finished.
        rmSync(dir, { force: true })
        swept++
        continue
      }
      for (const name of readdirSync(dir)) {
        if (this.#references.has(name)) continue
        rmSync(join(dir, name), { force: true })
        swept++
      }
    }
    if (swept > 0) this.#logger(`[sandkeep-local-e2b] swept ${swept} snapshot files no kept snapshot uses`)
  }

  #reference(manifest: Manifest, delta: 1 | -1): string[] {
    const freed: string[] = []
    for (const blob of ContentStore.blobsOf(manifest)) {
      const count = (this.#references.get(blob) ?? 0) + delta
      if (count > 0) this.#references.set(blob, count)
      else {
        this.#references.delete(blob)
        freed.push(blob)
      }
    }
    return freed
  }

  #pin(blob: string): void {
    this.#pins.set(blob, (this.#pins.get(blob) ?? 0) + 1)
  }

  /** True when the blob is held (kept or pinned) and so may be named without writing it again. */
  #held(blob: string): boolean {
    return this.#references.has(blob) || this.#pins.has(blob)
  }

  /** Deletes the blob when nothing holds it any more. */
  #freeIfUnused(blob: string): void {
    if (this.#held(blob)) return
    this.#sizes.delete(blob)
    try {
      unlinkSync(this.blobPath(blob))
    } catch {}
  }

  /**
   * Captures the disk under `top` (its processes frozen by the caller). `sandboxId` names whose previous
   * capture tells unchanged files; `skipTop` lists top-level names left out (an image's lost+found). The
   * capture holds its blobs until `release`.
   */
  capture(top: string, sandboxId: string, skipTop: string[] = []): Capture {
    const startedNs = BigInt(Date.now()) * 1_000_000n
    const previous = this.#memory.get(sandboxId)
    const memory: FileMemory = new Map()
    const entries: ManifestEntry[] = []
    const errors: Error[] = []
    const pinned: string[] = []
    const written: string[] = []
    const inodes = new Map<bigint, number>()
    let filesRead = 0
    let contentBytes = 0
    const paths = new ShortPaths(top)
    const hold = (blob: string) => {
      this.#pin(blob)
      pinned.push(blob)
    }
    const visit = (relative: Buffer, depth: number) => {
      let stats: BigIntStats
      let usable: Buffer
      try {
        paths.trim()
        usable = paths.of(relative)
        stats = lstatSync(usable, { bigint: true })
      } catch (error) {
        errors.push(error as Error)
        return
      }
      const type: EntryType | undefined = stats.isDirectory()
        ? 'd'
        : stats.isFile()
          ? 'f'
          : stats.isSymbolicLink()
            ? 'l'
            : stats.isFIFO()
              ? 'p'
              : undefined
      if (type === undefined) return
      const entry: ManifestEntry = {
        t: type,
        m: Number(stats.mode & 0o7777n),
        u: Number(stats.uid),
        g: Number(stats.gid),
        mt: stats.mtimeNs.toString(),
        at: stats.atimeNs.toString(),
      }
      setPath(entry, relative)
      try {
        if (type === 'l') entry.l = readlinkSync(usable, { encoding: 'buffer' }).toString('base64')
        if (type === 'f') {
          const first = stats.nlink > 1n ? inodes.get(stats.ino) : undefined
          if (first !== undefined) {
            entries.push({ ...entry, t: 'h', h: first })
            return
          }
          entry.s = Number(stats.size)
          contentBytes += entry.s
          const key = relative.toString('base64')
          const known = previous?.get(key)
          if (
            known &&
            known.ino === stats.ino &&
            known.size === stats.size &&
            known.mtime === stats.mtimeNs &&
            known.ctime === stats.ctimeNs &&
            this.#held(known.blob)
          ) {
            entry.b = known.blob
            hold(known.blob)
          } else {
            filesRead++
            const { blob, isNew } = this.#store(usable, stats)
            entry.b = blob
            hold(blob)
            if (isNew) written.push(blob)
          }
          if (stats.ctimeNs < startedNs - RACY_NS && stats.mtimeNs < startedNs - RACY_NS) {
            entry.i = stats.ino.toString()
            entry.c = stats.ctimeNs.toString()
            memory.set(key, {
              ino: stats.ino,
              size: stats.size,
              mtime: stats.mtimeNs,
              ctime: stats.ctimeNs,
              blob: entry.b,
            })
          }
        }
      } catch (error) {
        errors.push(error as Error)
        return
      }
      // Only a file whose entry was kept can be the target of a later hard link.
      if (type === 'f' && stats.nlink > 1n) inodes.set(stats.ino, entries.length)
      entries.push(entry)
      if (type !== 'd') return
      let names: Buffer[]
      try {
        names = readdirSync(usable, { encoding: 'buffer' })
      } catch (error) {
        errors.push(error as Error)
        return
      }
      names.sort(Buffer.compare)
      for (const name of names) {
        if (depth === 0 && skipTop.includes(name.toString('utf8'))) continue
        visit(childOf(relative, name), depth + 1)
      }
    }
    try {
      visit(Buffer.alloc(0), 0)
    } catch (error) {
      for (const blob of pinned) this.#unpin(blob)
      throw error
    } finally {
      paths.close()
    }
    let released = false
    return {
      manifest: { version: 1, contentBytes, entries },
      newBlobs: written.length,
      filesRead,
      errors,
      release: () => {
        if (released) return
        released = true
        for (const blob of pinned) this.#unpin(blob)
      },
      memory,
    }
  }

  /** Remembers what `capture` saw as the sandbox's previous capture (after it was kept). */
  remember(sandboxId: string, capture: Capture): void {
    this.#memory.set(sandboxId, capture.memory)
  }

  /** Forgets a sandbox's previous capture (it was deleted). */
  forget(sandboxId: string): void {
    this.#memory.delete(sandboxId)
  }

  /** Rebuilds a sandbox's previous capture from a kept manifest of it (after a host restart). */
  recall(sandboxId: string, manifest: Manifest): void {
    if (this.#memory.has(sandboxId)) return
    const memory: FileMemory = new Map()
    for (const entry of manifest.entries) {
      if (entry.t !== 'f' || !entry.b || entry.i === undefined || entry.c === undefined) continue
      memory.set(pathBytes(entry).toString('base64'), {
        ino: BigInt(entry.i),
        size: BigInt(entry.s ?? 0),
        mtime: BigInt(entry.mt),
        ctime: BigInt(entry.c),
        blob: entry.b,
      })
    }
    this.#memory.set(sandboxId, memory)
  }

  #unpin(blob: string): void {
    const count = (this.#pins.get(blob) ?? 0) - 1
    if (count > 0) this.#pins.set(blob, count)
    else {
      this.#pins.delete(blob)
      this.#freeIfUnused(blob)
    }
  }

  /** Hashes a file and writes its blob unless one is held already. */
  #store(path: Buffer, stats: BigIntStats): { blob: string; isNew: boolean } {
    if (stats.size <= BigInt(SMALL_FILE_BYTES)) {
      const fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW)
      let data: Buffer
      try {
        data = readFileSync(fd)
      } finally {
        closeSync(fd)
      }
      const blob = createHash('sha256').update(data).digest('hex')
      if (this.#held(blob)) return { blob, isNew: false }
      this.#placeBlob(blob, (fd) => {
        writeSparse(fd, data, data.length, 0)
        ftruncateSync(fd, data.length)
      })
      return { blob, isNew: true }
    }
    // A big file: hashed while it is written to a temp blob, renamed to its hash unless held already.
    const temp = join(this.#blobs, `.tmp-${randomBytes(8).toString('hex')}`)
    const out = openSync(temp, 'wx', 0o600)
    const hash = createHash('sha256')
    try {
      const fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW)
      try {
        const buffer = Buffer.allocUnsafe(CHUNK_BYTES)
        let position = 0
        for (;;) {
          const read = readSync(fd, buffer, 0, CHUNK_BYTES, position)
          if (read === 0) break
          hash.update(buffer.subarray(0, read))
          writeSparse(out, buffer, read, position)
          position += read
        }
        ftruncateSync(out, position)
      } finally {
        closeSync(fd)
      }
    } catch (error) {
      closeSync(out)
      rmSync(temp, { force: true })
      throw error
    }
    const blob = hash.digest('hex')
    const bytes = fstatSync(out).blocks * 512
    closeSync(out)
    if (this.#held(blob)) {
      rmSync(temp, { force: true })
      return { blob, isNew: false }
    }
    mkdirSync(join(this.#blobs, blob.slice(0, 2)), { recursive: true, mode: 0o700 })
    renameSync(temp, this.blobPath(blob))
    this.#sizes.set(blob, bytes)
    return { blob, isNew: true }
  }

  /** Writes a new blob through a temp file and a rename. */
  #placeBlob(blob: string, write: (fd: number) => void): void {
    const temp = join(this.#blobs, `.tmp-${randomBytes(8).toString('hex')}`)
    const fd = openSync(temp, 'wx', 0o600)
    let bytes: number
    try {
      write(fd)
      bytes = fstatSync(fd).blocks * 512
    } catch (error) {
      closeSync(fd)
      rmSync(temp, { force: true })
      throw error
    }
    closeSync(fd)
    mkdirSync(join(this.#blobs, blob.slice(0, 2)), { recursive: true, mode: 0o700 })
    renameSync(temp, this.blobPath(blob))
    this.#sizes.set(blob, bytes)
  }

  /** Holds every blob of `manifest` until the returned function is called (a restore in progress). */
  hold(manifest: Manifest): () => void {
    const blobs = [...ContentStore.blobsOf(manifest)]
    for (const blob of blobs) this.#pin(blob)
    let released = false
    return () => {
      if (released) return
      released = true
      for (const blob of blobs) this.#unpin(blob)
    }
  }

  /** Writes a manifest (temp + rename); returns the bytes it takes. */
  writeManifest(file: string, manifest: Manifest): number {
    const path = this.manifestPath(file)
    const temp = `${path}.tmp-${randomBytes(4).toString('hex')}`
    writeFileSync(temp, JSON.stringify(manifest), { mode: 0o600 })
    renameSync(temp, path)
    return lstatSync(path).blocks * 512
  }

  /** Counts a written manifest's blobs as kept (its snapshot was committed). */
  keep(manifest: Manifest): void {
    this.#reference(manifest, 1)
  }

  /** Drops a kept manifest: its file, and every blob no other kept snapshot or capture holds. */
  drop(file: string, manifest: Manifest): void {
    for (const blob of this.#reference(manifest, -1)) this.#freeIfUnused(blob)
    rmSync(this.manifestPath(file), { force: true })
  }

  /** Deletes a manifest file never kept (a capture given up). */
  discardManifest(file: string): void {
    rmSync(this.manifestPath(file), { force: true })
  }

  /**
   * Writes the files of `manifest` under `destination` (which must not exist, or be an empty fresh disk): content from the blobs, holes
   * kept, owners, modes and times as captured; directories get their modes last (a read-only one still gets
   * its children). Owners are kept only when the host runs as root.
   */
  materialize(manifest: Manifest, destination: string): void {
    const asRoot = typeof process.geteuid === 'function' && process.geteuid() === 0
    const paths = new ShortPaths(destination)
    const directories: ManifestEntry[] = []
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES)
    try {
      manifest.entries.forEach((entry, index) => {
        paths.trim()
        const usable = paths.of(pathBytes(entry))
        const times = [
          Number(BigInt(entry.at) / 1000n) / 1e6,
          Number(BigInt(entry.mt) / 1000n) / 1e6,
        ] as const
        switch (entry.t) {
          case 'd':
            // The top may exist already: a fresh disk image, mounted.
            if (index > 0 || !existsSync(usable)) mkdirSync(usable, { mode: 0o700 })
            directories.push(entry)
            break
          case 'f': {
            const fd = openSync(usable, 'wx', 0o600)
            try {
              if (entry.s && entry.b) copyContent(this.blobPath(entry.b), fd, entry.s, buffer)
              if (asRoot) fchownSync(fd, entry.u, entry.g)
              fchmodSync(fd, entry.m)
              futimesSync(fd, times[0], times[1])
            } finally {
              closeSync(fd)
            }
            break
          }
          case 'h': {
            const first = manifest.entries[entry.h ?? -1]
            if (first?.t !== 'f') throw new Error(`manifest entry ${index} links to no file`)
            linkSync(paths.of(pathBytes(first)), usable)
            break
          }
          case 'l':
            symlinkSync(Buffer.from(entry.l ?? '', 'base64'), usable)
            if (asRoot) lchownSync(usable, entry.u, entry.g)
            lutimesSync(usable, times[0], times[1])
            break
          case 'p':
            execFileSync('mkfifo', ['-m', (entry.m & 0o777).toString(8), '--', usable.toString()], {
              stdio: 'ignore',
            })
            if (asRoot) lchownSync(usable, entry.u, entry.g)
            break
        }
      })
      // Deepest first, so that a directory's time is set after its children were made.
      for (const entry of directories.reverse()) {
        paths.trim()
        const usable = paths.of(pathBytes(entry))
        if (asRoot) lchownSync(usable, entry.u, entry.g)
        const fd = openSync(usable, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW)
        try {
          fchmodSync(fd, entry.m)
          futimesSync(fd, Number(BigInt(entry.at) / 1000n) / 1e6, Number(BigInt(entry.mt) / 1000n) / 1e6)
        } finally {
          closeSync(fd)
        }
      }
    } finally {
      paths.close()
    }
  }
}
