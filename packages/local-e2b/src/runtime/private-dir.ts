// Directories and files only the host's own user can have written: what the host may trust when it runs as
// root in a place (a temp dir, /run) where other local users can create names first.
import { lstatSync, statSync } from 'node:fs'
import { dirname } from 'node:path'

/** The host's effective uid (0 where the platform has none). */
export const hostUid = (): number => (typeof process.geteuid === 'function' ? process.geteuid() : 0)

/**
 * True when only this user can have put anything in `dir`: a real directory (not a link), ours, with no
 * permission for group or others, in a parent where nobody else can rename it away (not writable by others,
 * or sticky like /tmp).
 */
export function isPrivateDirectory(dir: string): boolean {
  try {
    const stats = lstatSync(dir)
    if (!stats.isDirectory() || stats.uid !== hostUid() || (stats.mode & 0o077) !== 0) return false
    const parent = statSync(dirname(dir))
    return (parent.mode & 0o002) === 0 || (parent.mode & 0o1000) !== 0
  } catch {
    return false
  }
}

/** True when `path` is a regular file of this user that nobody else can write. */
export function isOwnFile(path: string): boolean {
  try {
    const stats = lstatSync(path)
    return stats.isFile() && stats.uid === hostUid() && (stats.mode & 0o022) === 0
  } catch {
    return false
  }
}
