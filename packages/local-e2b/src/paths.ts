// Sandbox paths (what a process inside sees): normalizing them, and refusing every path that would leave the
// sandbox. Only the sandbox's writable tree is reachable through envd's file API: `/home/user/...`, `/tmp/...`
// and root's home `/root/...` (the system directories are read-only host binds, not the sandbox's own). Opening one on the host
// is SandboxFs's job (sandbox-fs.ts), walked race-free.

import type { SandboxUser } from './runtime/etc-files.js'

/** The sandbox's home and default working directory. */
export const SANDBOX_HOME = '/home/user'

/** Root's home inside the sandbox (on its disk, as `/home/user`). */
export const SANDBOX_ROOT_HOME = '/root'

/** Sandbox path prefixes that live in the sandbox's own directory on the host. */
const WRITABLE_ROOTS = ['/home/user', '/tmp', '/root'] as const

/** The home of a sandbox user: where its relative paths start, its HOME. */
export function homeOf(user: SandboxUser): string {
  return user === 'root' ? SANDBOX_ROOT_HOME : SANDBOX_HOME
}

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
