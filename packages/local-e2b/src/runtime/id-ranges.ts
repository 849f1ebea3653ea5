// Host uid/gid ranges, one per sandbox: each sandbox's user namespace maps its ids 0-65535 onto its own
// range, so that no two sandboxes share a host uid and with it a per-user kernel resource (user keyrings,
// inotify instances, ...). Ranges are claimed machine-wide, since every host on the machine draws from the
// same uids: one claim file per range in a root-private directory, made with O_EXCL, naming the registry and
// the sandbox directory that own it. The index is persisted in the registry and claimed again by a host
// restarting on it. A claim whose owner no longer lists it (its host deleted the sandbox or its state dir
// without releasing it, after a crash) is taken over.
import {
  closeSync,
  constants as fsConstants,
  lchownSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  type Stats,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { LocalE2BError, LocalE2BErrorCode } from '../errors.js'
import { isPrivateDirectory } from './private-dir.js'

/** Ids one sandbox's user namespace maps (inside ids 0 to 65535). */
export const ID_RANGE_SIZE = 65_536
/**
 * First host id of the first range: above the ranges Debian hands out in /etc/subuid (from 100000) and
 * systemd's container ranges (up to 0x6fffffff), below 2^31, where some tools read uids as signed.
 */
export const FIRST_HOST_ID = 0x7000_0000
/** How many ranges fit from {@link FIRST_HOST_ID} to 2^31: the most sandboxes a machine holds at once. */
export const ID_RANGE_COUNT = (2 ** 31 - FIRST_HOST_ID) / ID_RANGE_SIZE

/** A claim younger than this is never taken over: its host may be creating the sandbox right now. */
const CLAIM_GRACE_MS = 60_000

/** The host id that id `inside` of the sandbox with range `index` is. */
export function hostIdOf(index: number, inside: number): number {
  return FIRST_HOST_ID + index * ID_RANGE_SIZE + inside
}

/** What a claim file says. */
interface Claim {
  /** registry.json of the host that holds the range. */
  registry: string
  /** The sandbox directory (stable across id changes). */
  rootDir: string
}

function parseClaim(text: string): Claim | undefined {
  try {
    const claim = JSON.parse(text) as Partial<Claim>
    if (typeof claim.registry === 'string' && typeof claim.rootDir === 'string')
      return { registry: claim.registry, rootDir: claim.rootDir }
  } catch {}
  return undefined
}

function readClaim(path: string): Claim | undefined {
  try {
    return parseClaim(readFileSync(path, 'utf8'))
  } catch {
    return undefined
  }
}

/** True when the claim's registry still lists a sandbox in that directory on that range. */
function claimIsLive(claim: Claim, index: number): boolean {
  try {
    const registry = JSON.parse(readFileSync(claim.registry, 'utf8')) as { sandboxes?: unknown[] }
    return (registry.sandboxes ?? []).some((value) => {
      const record = value as { rootDir?: unknown; idRange?: unknown }
      return record.rootDir === claim.rootDir && record.idRange === index
    })
  } catch (error) {
    // A registry that exists but cannot be read right now is not proof that the claim is dead.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT'
  }
}

/** The machine-wide claims directory (root-private); throws when it cannot be made private. */
export function idRangeDirectory(): string {
  const base = '/run/sandkeep-local-e2b'
  const dir = join(base, 'id-ranges')
  for (const path of [base, dir]) {
    try {
      mkdirSync(path, { mode: 0o700 })
    } catch {}
    if (!isPrivateDirectory(path)) {
      throw new LocalE2BError({
        code: LocalE2BErrorCode.UNSUPPORTED,
        message: `${path} must be a directory of this user with mode 0700 (it holds which host uids each sandbox owns); remove it or fix its owner and mode`,
      })
    }
  }
  return dir
}

/** The ranges of one host: claims tagged with its registry. */
export class IdRanges {
  constructor(
    readonly dir: string,
    readonly registryPath: string,
  ) {}

  #path(index: number): string {
    return join(this.dir, String(index))
  }

  #content(rootDir: string): string {
    return JSON.stringify({ registry: this.registryPath, rootDir } satisfies Claim)
  }

  #ours(claim: Claim | undefined, rootDir: string): boolean {
    return claim?.registry === this.registryPath && claim.rootDir === rootDir
  }

  /** Claims a free range for the sandbox in `rootDir`; throws LocalE2BError UNSUPPORTED when none is free. */
  allocate(rootDir: string): number {
    for (let index = 0; index < ID_RANGE_COUNT; index++) {
      if (this.#tryClaim(index, rootDir)) return index
    }
    throw new LocalE2BError({
      code: LocalE2BErrorCode.UNSUPPORTED,
      message: `all ${ID_RANGE_COUNT} host uid ranges of this machine are taken by sandboxes; kill some`,
    })
  }

  /**
   * Claims `index` again for the sandbox in `rootDir` (a host restarting on its registry): true when the range
   * is now this sandbox's, false when another sandbox holds it (the caller then allocates another).
   */
  reclaim(index: number, rootDir: string): boolean {
    if (!Number.isInteger(index) || index < 0 || index >= ID_RANGE_COUNT) return false
    if (this.#ours(readClaim(this.#path(index)), rootDir)) return true
    return this.#tryClaim(index, rootDir)
  }

  /** Gives a range back (a killed sandbox), unless it is not this sandbox's claim any more. */
  release(index: number, rootDir: string): void {
    if (this.#ours(readClaim(this.#path(index)), rootDir)) rmSync(this.#path(index), { force: true })
  }

  #tryClaim(index: number, rootDir: string): boolean {
    const path = this.#path(index)
    try {
      writeFileSync(path, this.#content(rootDir), { flag: 'wx', mode: 0o600 })
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    return this.#takeOver(index, rootDir)
  }

  /** Takes a dead claim over, under a lock so that two hosts never both think they took it. */
  #takeOver(index: number, rootDir: string): boolean {
    const path = this.#path(index)
    let before: string
    try {
      if (Date.now() - lstatSync(path).mtimeMs < CLAIM_GRACE_MS) return false
      before = readFileSync(path, 'utf8')
    } catch {
      return false
    }
    const claim = parseClaim(before)
    if (claim && claimIsLive(claim, index)) return false
    const lock = `${path}.lock`
    try {
      mkdirSync(lock)
    } catch {
      return false
    }
    try {
      // Someone else took it over between the read and the lock.
      if (readFileSync(path, 'utf8') !== before) return false
      const temp = `${path}.${process.pid}.tmp`
      writeFileSync(temp, this.#content(rootDir), { mode: 0o600 })
      renameSync(temp, path)
      return true
    } catch {
      return false
    } finally {
      rmdirSync(lock)
    }
  }
}

/** A path past this many bytes is walked on from an fd of its directory (the kernel refuses 4,096 and more). */
const LONG_PATH_BYTES = 2048

/**
 * Calls `visit` on `path` and everything under it, links included and not followed. No path handed to the
 * system grows past {@link LONG_PATH_BYTES}: a deeper directory is opened (O_NOFOLLOW) and walked on as
 * `/proc/self/fd/<fd>`, so a workspace holding a path of any length is walked whole. An entry that fails is
 * recorded in `errors` and the walk goes on with the next one.
 */
export function walkTree(path: string, visit: (path: string, stats: Stats) => void, errors: Error[]): void {
  let stats: Stats
  try {
    stats = lstatSync(path)
    visit(path, stats)
  } catch (error) {
    errors.push(error as Error)
    return
  }
  if (!stats.isDirectory()) return
  if (Buffer.byteLength(path) <= LONG_PATH_BYTES) {
    walkChildren(path, visit, errors)
    return
  }
  let fd: number
  try {
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW)
  } catch (error) {
    errors.push(error as Error)
    return
  }
  try {
    walkChildren(`/proc/self/fd/${fd}`, visit, errors)
  } finally {
    closeSync(fd)
  }
}

function walkChildren(dir: string, visit: (path: string, stats: Stats) => void, errors: Error[]): void {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch (error) {
    errors.push(error as Error)
    return
  }
  for (const name of names) walkTree(join(dir, name), visit, errors)
}

/** The host uid (= gid) a sandbox made before per-sandbox ranges ran its `user` as. */
const LEGACY_USER_ID = 1_500_000

/**
 * Gives a sandbox's files to its new id range: after it moved from range `from` (or from the single uid of
 * the hosts before ranges, `legacy`, whose root templates wrote as host root) to range `to`. Walks `dirs`
 * whole without following links, whatever the length of a path in them; returns what failed (every other
 * entry was still moved).
 */
export function rebaseOwnership(dirs: string[], from: number | 'legacy', to: number): Error[] {
  const moved = (id: number): number | undefined => {
    if (from === 'legacy') {
      if (id === LEGACY_USER_ID) return hostIdOf(to, 1000)
      return id === 0 ? hostIdOf(to, 0) : undefined
    }
    const offset = id - hostIdOf(from, 0)
    return offset >= 0 && offset < ID_RANGE_SIZE ? hostIdOf(to, offset) : undefined
  }
  const errors: Error[] = []
  for (const dir of dirs) {
    walkTree(
      dir,
      (path, stats) => {
        const uid = moved(stats.uid)
        const gid = moved(stats.gid)
        if (uid !== undefined || gid !== undefined) lchownSync(path, uid ?? stats.uid, gid ?? stats.gid)
      },
      errors,
    )
  }
  return errors
}
