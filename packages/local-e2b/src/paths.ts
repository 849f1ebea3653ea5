// Maps a sandbox path (what a process inside sees) onto the host directory that backs it, and refuses every
// path that would leave the sandbox. Only the sandbox's writable tree is reachable through envd's file API:
// `/home/user/...` and `/tmp/...` (the system directories are read-only host binds, not the sandbox's own).
import { lstatSync, realpathSync } from 'node:fs'
import { posix, sep } from 'node:path'

/** The sandbox's home and default working directory. */
export const SANDBOX_HOME = '/home/user'

/** Sandbox path prefixes that live in the sandbox's own directory on the host. */
const WRITABLE_ROOTS = ['/home/user', '/tmp'] as const

/** Why a path was refused; the envd layer turns it into `invalid_argument` or `permission_denied`. */
export class PathEscapeError extends Error {
  override readonly name = 'PathEscapeError'
}

/**
 * Normalizes a sandbox path: relative paths are relative to `/home/user` (`~` too), `..` that would climb
 * out of the sandbox's writable tree is refused rather than clamped, so `../../etc/passwd` never means
 * something by accident.
 */
export function normalizeSandboxPath(input: string, cwd: string = SANDBOX_HOME): string {
  if (typeof input !== 'string' || input.length === 0)
    throw new PathEscapeError('path must be a non-empty string')
  if (input.length > 4096) throw new PathEscapeError('path is longer than 4096 characters')
  if (/[\u0000-\u001f]/.test(input)) throw new PathEscapeError('path contains control characters')
  let path = input
  if (path === '~' || path.startsWith('~/')) path = SANDBOX_HOME + path.slice(1)
  const absolute = path.startsWith('/') ? path : `${cwd}/${path}`
  // Walk the segments ourselves: posix.normalize would silently clamp `/..` to `/`.
  const parts: string[] = []
  for (const segment of absolute.split('/')) {
    if (segment === '' || segment === '.') continue
    if (segment === '..') {
      if (parts.length === 0) throw new PathEscapeError(`path ${input} climbs above /`)
      parts.pop()
      continue
    }
    parts.push(segment)
  }
  return `/${parts.join('/')}`
}

/** True when `path` (normalized) is inside one of the sandbox's writable roots. */
export function isWritableSandboxPath(path: string): boolean {
  return WRITABLE_ROOTS.some((root) => path === root || path.startsWith(`${root}/`))
}

/**
 * Resolves a sandbox path to the host path under `rootDir` (the directory holding `home/user` and `tmp`).
 * Refuses paths outside the writable roots and paths whose existing part resolves (through symlinks)
 * outside `rootDir`. The final component may be missing (for writes and makeDir).
 * A check only, not race-free: anything that opens a sandbox path goes through SandboxFs (sandbox-fs.ts).
 */
export function resolveSandboxPath(rootDir: string, input: string, cwd?: string): string {
  const path = normalizeSandboxPath(input, cwd)
  if (!isWritableSandboxPath(path)) {
    throw new PathEscapeError(`path ${path} is outside the sandbox's writable tree (/home/user, /tmp)`)
  }
  const hostPath = rootDir + path
  assertInside(rootDir, hostPath)
  return hostPath
}

/**
 * Checks, through symlinks, that the deepest existing ancestor of `hostPath` (or itself) stays in `rootDir`.
 * A symlink inside the sandbox pointing to `/etc/passwd` would otherwise make the host read its own file.
 */
export function assertInside(rootDir: string, hostPath: string): void {
  const realRoot = realpathSync(rootDir)
  let probe = hostPath
  for (;;) {
    let exists = true
    try {
      lstatSync(probe)
    } catch {
      exists = false
    }
    if (exists) {
      let real: string
      try {
        real = realpathSync(probe)
      } catch {
        // A dangling symlink: its target does not exist, so judge the link text itself.
        throw new PathEscapeError(`path ${hostPath.slice(rootDir.length)} is a dangling symlink`)
      }
      if (real !== realRoot && !real.startsWith(realRoot + sep)) {
        throw new PathEscapeError(`path ${hostPath.slice(rootDir.length)} resolves outside the sandbox`)
      }
      return
    }
    const parent = posix.dirname(probe)
    if (parent === probe) return
    probe = parent
  }
}

/** The sandbox path of a host path under `rootDir` (inverse of {@link resolveSandboxPath}). */
export function toSandboxPath(rootDir: string, hostPath: string): string {
  return hostPath.slice(rootDir.length) || '/'
}
