// File operations the host does on behalf of a sandbox, immune to symlink swaps. Code inside
// the sandbox can swap any path component for a symlink at any moment, so the host never opens a sandbox path
// by name: it walks from a directory fd one component at a time, opening `/proc/self/fd/<dirfd>/<name>` with
// O_NOFOLLOW (the magic link pins the directory already opened; only `<name>` is looked up, never followed).
// Symlinks are resolved by the host itself inside the sandbox's view (RESOLVE_IN_ROOT semantics: an absolute
// target means the sandbox's `/`, `..` never climbs out) and the result must stay in the writable tree.
// Final operations go through the parent's fd too: rename/unlink/mkdir of `/proc/self/fd/<dirfd>/<name>` do
// not follow the last component. Node has no openat, and this costs no process spawn per operation.
import { randomBytes } from 'node:crypto'
import { constants, type Stats } from 'node:fs'
import {
  type FileHandle,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  rename,
  rmdir,
  unlink,
} from 'node:fs/promises'
import { posix } from 'node:path'
import type { Readable } from 'node:stream'
import { isWritableSandboxPath, normalizeSandboxPath, PathEscapeError, SANDBOX_HOME } from './paths.js'

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants

/** What an upload's temp file is named before its rename (a watch of the directory hides these names). */
const UPLOAD_TEMP = /^\.sandkeep-upload-[0-9a-f]{12}$/

/** True for the name of an upload's temp file. */
export function isUploadTemp(name: string): boolean {
  return UPLOAD_TEMP.test(name)
}

/** Symlink hops one path may take (Linux's own limit is 40). */
const MAX_HOPS = 40

/** A filesystem failure with the errno-style code the envd layer maps (ENOENT, ENOTDIR, EISDIR, EEXIST...). */
export class SandboxFsError extends Error {
  override readonly name = 'SandboxFsError'
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** Uid/gid given to what the host creates (absent: the host's own). */
export interface FsOwner {
  uid: number
  gid: number
}

/** The final component of a walked path: its parent directory held by fd, its name, its sandbox path. */
export interface Located {
  dir: FileHandle
  name: string
  /** The sandbox path after in-root symlink resolution of its parents (and of itself when followed). */
  path: string
}

const fdPath = (dir: FileHandle, name?: string) =>
  `/proc/self/fd/${dir.fd}${name === undefined ? '' : `/${name}`}`

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code
}

/** The file operations of one sandbox whose writable tree lives under `rootDir` on the host. */
export class SandboxFs {
  constructor(
    readonly rootDir: string,
    private readonly owner: () => FsOwner | undefined = () => undefined,
    /** Where relative paths start: the home of the user the operations are for. */
    readonly home: string = SANDBOX_HOME,
  ) {}

  /** `input` as the absolute sandbox path it names for this user (relative paths start at its home). */
  normalize(input: string): string {
    return normalizeSandboxPath(input, this.home)
  }

  /**
   * Walks `input` (a sandbox path) to its last component. Parents are followed through symlinks in-root;
   * the last one too when `followLast`. Missing parents are created (owned by the sandbox) when `createParents`.
   * The caller closes `dir`.
   */
  async locate(input: string, options: { followLast: boolean; createParents?: boolean }): Promise<Located> {
    let path = checked(this.normalize(input))
    for (let hops = 0; ; hops++) {
      if (hops > MAX_HOPS) throw new SandboxFsError('ELOOP', `too many symlinks resolving ${input}`)
      const parts = path.split('/').filter(Boolean)
      let dir = await open(this.rootDir, O_RDONLY | O_DIRECTORY)
      let redirected: string | undefined
      try {
        for (let index = 0; index < parts.length - 1; index++) {
          const name = parts[index] as string
          const next = await this.#openDir(dir, name, options.createParents === true)
          if (typeof next === 'string') {
            redirected = resolveLink(parentOf(parts, index), next, parts.slice(index + 1))
            break
          }
          await dir.close()
          dir = next
        }
        if (redirected === undefined) {
          const name = parts[parts.length - 1] as string
          if (options.followLast) {
            const stats = await lstat(fdPath(dir, name)).catch(() => undefined)
            if (stats?.isSymbolicLink()) {
              redirected = resolveLink(
                parentOf(parts, parts.length - 1),
                await readlink(fdPath(dir, name)),
                [],
              )
            }
          }
          if (redirected === undefined) return { dir, name, path }
        }
      } catch (error) {
        await dir.close()
        throw error
      }
      await dir.close()
      path = checked(redirected)
    }
  }

  /** Opens `name` in `dir` as a directory without following it; a symlink's target text comes back instead. */
  async #openDir(dir: FileHandle, name: string, create: boolean): Promise<FileHandle | string> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await open(fdPath(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
      } catch (error) {
        const code = errnoOf(error)
        if (code === 'ENOENT' && create && attempt < 3) {
          await this.#mkdirOwned(dir, name).catch((mkdirError) => {
            if (errnoOf(mkdirError) !== 'EEXIST') throw mkdirError
          })
          continue
        }
        if (code === 'ELOOP' || code === 'ENOTDIR') {
          const target = await readlink(fdPath(dir, name)).catch(() => undefined)
          if (target !== undefined) return target
          throw new SandboxFsError('ENOTDIR', `'${name}' is not a directory`)
        }
        if (code === 'ENOENT') throw new SandboxFsError('ENOENT', `directory '${name}' does not exist`)
        throw error
      }
    }
  }

  /** mkdir of `name` in `dir`, then chown through an fd opened without following. */
  async #mkdirOwned(dir: FileHandle, name: string): Promise<void> {
    await mkdir(fdPath(dir, name), { mode: 0o755 })
    const owner = this.owner()
    if (!owner) return
    const created = await open(fdPath(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    try {
      await created.chown(owner.uid, owner.gid)
    } finally {
      await created.close()
    }
  }

  /** lstat of the located entry (through its parent fd). */
  lstat(located: Located): Promise<Stats> {
    return lstat(fdPath(located.dir, located.name))
  }

  /** readlink of the located entry. */
  readlink(located: Located): Promise<string> {
    return readlink(fdPath(located.dir, located.name))
  }

  /** Stats of what `input` names, following symlinks in-root; undefined when missing or leaving the tree. */
  async statFollowing(input: string): Promise<Stats | undefined> {
    const located = await this.locate(input, { followLast: true }).catch(() => undefined)
    if (!located) return undefined
    try {
      const stats = await this.lstat(located).catch(() => undefined)
      return stats?.isSymbolicLink() ? undefined : stats
    } finally {
      await located.dir.close()
    }
  }

  /** Opens a directory for reading (listing, watching); the caller closes it. */
  async openDirectory(input: string): Promise<{ handle: FileHandle; path: string }> {
    const located = await this.locate(input, { followLast: true })
    try {
      const handle = await this.#openDir(located.dir, located.name, false)
      if (typeof handle === 'string')
        throw new SandboxFsError('ELOOP', `path '${input}' changed while opening it`)
      return { handle, path: located.path }
    } finally {
      await located.dir.close()
    }
  }

  /** Names in a directory held by fd. */
  readdir(handle: FileHandle): Promise<string[]> {
    return readdir(fdPath(handle))
  }

  /** lstat of `name` inside a directory held by fd. */
  lstatIn(handle: FileHandle, name: string): Promise<Stats> {
    return lstat(fdPath(handle, name))
  }

  /** Opens a subdirectory of a directory held by fd without following it (undefined when it is not one). */
  async openChildDirectory(handle: FileHandle, name: string): Promise<FileHandle | undefined> {
    return open(fdPath(handle, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW).catch(() => undefined)
  }

  /** Path usable by APIs that take a path (fs.watch) for a directory held by fd. */
  pathOf(handle: FileHandle): string {
    return fdPath(handle)
  }

  /** Opens a regular file for reading; FIFOs and devices are refused (O_NONBLOCK: a FIFO never blocks us). */
  async openRead(input: string): Promise<{ handle: FileHandle; stats: Stats }> {
    for (let attempt = 0; attempt < MAX_HOPS; attempt++) {
      const located = await this.locate(input, { followLast: true })
      let handle: FileHandle
      try {
        handle = await open(fdPath(located.dir, located.name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
      } catch (error) {
        if (errnoOf(error) === 'ELOOP') continue // swapped for a symlink since the walk: walk again
        if (errnoOf(error) === 'ENOENT') throw new SandboxFsError('ENOENT', `file '${input}' does not exist`)
        throw error
      } finally {
        await located.dir.close()
      }
      const stats = await handle.stat()
      if (stats.isDirectory() || !stats.isFile()) {
        await handle.close()
        throw new SandboxFsError(
          stats.isDirectory() ? 'EISDIR' : 'EINVAL',
          `path '${input}' is not a regular file`,
        )
      }
      return { handle, stats }
    }
    throw new SandboxFsError('ELOOP', `too many symlinks resolving ${input}`)
  }

  /**
   * Streams `source` into the file `input` names: into a temp file created O_EXCL next to it (never through a
   * symlink), renamed over the target through the parent's fd only once complete, so a failed or oversized
   * upload leaves no partial file. A new file belongs to the sandbox's owner; an existing one keeps its owner
   * and mode. `beforeReplace` runs once the temp file is complete, just before the rename (its failure fails
   * the write): it gets the temp file (its directory fd and name), the sandbox path and whether a file was
   * there.
   */
  async writeStream(
    input: string,
    source: Readable,
    beforeReplace?: (replacing: {
      dir: FileHandle
      temp: string
      path: string
      existed: boolean
    }) => Promise<void>,
  ): Promise<string> {
    const located = await this.locate(input, { followLast: true, createParents: true })
    try {
      const existing = await this.lstat(located).catch(() => undefined)
      if (existing?.isDirectory()) throw new SandboxFsError('EISDIR', `path '${input}' is a directory`)
      const temp = `.sandkeep-upload-${randomBytes(6).toString('hex')}`
      const tempPath = fdPath(located.dir, temp)
      const handle = await open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644)
      try {
        try {
          const owner = existing?.isFile() ? { uid: existing.uid, gid: existing.gid } : this.owner()
          if (owner) await handle.chown(owner.uid, owner.gid)
          if (existing?.isFile()) await handle.chmod(existing.mode & 0o7777)
          for await (const chunk of source) {
            const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Uint8Array)
            for (let offset = 0; offset < bytes.length; ) {
              offset += (await handle.write(bytes, offset, bytes.length - offset)).bytesWritten
            }
          }
        } finally {
          await handle.close()
        }
        await beforeReplace?.({ dir: located.dir, temp, path: located.path, existed: existing !== undefined })
        await rename(tempPath, fdPath(located.dir, located.name))
      } catch (error) {
        await unlink(tempPath).catch(() => {})
        if (errnoOf(error) === 'EISDIR') throw new SandboxFsError('EISDIR', `path '${input}' is a directory`)
        throw error
      }
      return located.path
    } finally {
      await located.dir.close()
    }
  }

  /** mkdir of `input` (parents created); EEXIST when it exists. Returns the sandbox path made. */
  async makeDir(input: string): Promise<string> {
    const located = await this.locate(input, { followLast: false, createParents: true })
    try {
      await this.#mkdirOwned(located.dir, located.name).catch((error) => {
        if (errnoOf(error) === 'EEXIST') throw new SandboxFsError('EEXIST', `path '${input}' already exists`)
        throw error
      })
      return located.path
    } finally {
      await located.dir.close()
    }
  }

  /** rename of `source` (itself, not what it links to) to `destination` (parents created). */
  async move(source: string, destination: string): Promise<string> {
    const from = await this.locate(source, { followLast: false })
    try {
      await this.lstat(from).catch(() => {
        throw new SandboxFsError('ENOENT', `path '${source}' does not exist`)
      })
      const to = await this.locate(destination, { followLast: false, createParents: true })
      try {
        await rename(fdPath(from.dir, from.name), fdPath(to.dir, to.name))
        return to.path
      } finally {
        await to.dir.close()
      }
    } finally {
      await from.dir.close()
    }
  }

  /**
   * Removes `input` (a directory recursively, a symlink itself). A path that does not exist, or whose parent
   * does not, is already removed: no error, as envd's remove (Go's os.RemoveAll) answers.
   */
  async remove(input: string): Promise<void> {
    const located = await this.locate(input, { followLast: false }).catch((error: unknown) => {
      if (errnoOf(error) === 'ENOENT') return undefined
      throw error
    })
    if (!located) return
    try {
      const exists = await this.lstat(located).then(
        () => true,
        () => false,
      )
      if (exists) await removeIn(located.dir, located.name, 0)
    } finally {
      await located.dir.close()
    }
  }
}

/** Removes `name` from a directory held by fd; subdirectories are entered by fd, never by path. */
async function removeIn(dir: FileHandle, name: string, depth: number): Promise<void> {
  const child =
    depth < 256
      ? await open(fdPath(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW).catch(() => undefined)
      : undefined
  if (!child) {
    await unlink(fdPath(dir, name)).catch((error) => {
      if (errnoOf(error) !== 'ENOENT') throw error
    })
    return
  }
  try {
    for (const entry of await readdir(fdPath(child))) await removeIn(child, entry, depth + 1)
  } finally {
    await child.close()
  }
  await rmdir(fdPath(dir, name)).catch((error) => {
    if (errnoOf(error) !== 'ENOENT') throw error
  })
}

function checked(path: string): string {
  if (!isWritableSandboxPath(path)) {
    throw new PathEscapeError(`path ${path} is outside the sandbox's writable tree (/home/user, /tmp, /root)`)
  }
  return path
}

/** The sandbox path of the directory holding `parts[index]`. */
function parentOf(parts: string[], index: number): string {
  return `/${parts.slice(0, index).join('/')}`
}

/** Resolves a symlink's target text seen from `base`, then appends the remaining components. */
function resolveLink(base: string, target: string, rest: string[]): string {
  const resolved = normalizeSandboxPath(
    target.startsWith('/') ? target : posix.join(base, target) || '/',
    base,
  )
  return rest.length === 0 ? resolved : `${resolved === '/' ? '' : resolved}/${rest.join('/')}`
}
