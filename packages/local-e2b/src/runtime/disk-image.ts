// A sandbox's disk of its own size: an ext4 image (no journal, sparse) beside its directory, loop-mounted over
// it, so that a full disk is the sandbox's ENOSPC and not the host's. It outlives pauses, cold boots and host
// restarts; removeStorage deletes it with the directory.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** True when `path` is a mount point (its device differs from its parent's). */
export function isMountPoint(path: string): boolean {
  try {
    return statSync(path).dev !== statSync(dirname(path)).dev
  } catch {
    return false
  }
}

/** The disk image of a sandbox, beside its directory. */
export function diskImageOf(rootDir: string): string {
  return `${rootDir}.img`
}

/**
 * Mounts the sandbox's image over `rootDir` (creating it first); true when `rootDir` is then the image. A
 * sandbox made before disk images existed keeps its files on the host's disk rather than losing them (false).
 */
export function mountDisk(rootDir: string, bytes: number): boolean {
  if (isMountPoint(rootDir)) return true
  const image = diskImageOf(rootDir)
  if (!existsSync(image)) {
    const home = join(rootDir, 'home/user')
    if (existsSync(home) && readdirSync(home).length > 0) return false
    writeFileSync(image, '', { mode: 0o600 })
    truncateSync(image, bytes)
    execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', '-O', '^has_journal', '-E', 'nodiscard', image], {
      stdio: 'ignore',
      timeout: 30_000,
    })
  }
  mkdirSync(rootDir, { recursive: true })
  execFileSync('mount', ['-o', 'loop,nosuid,nodev', image, rootDir], { stdio: 'pipe', timeout: 30_000 })
  return true
}

/** Unmounts the image from `rootDir` when `mounted` says so or it is found mounted there. */
export function unmountDisk(rootDir: string, mounted: boolean): void {
  if (!mounted && !(existsSync(diskImageOf(rootDir)) && isMountPoint(rootDir))) return
  try {
    execFileSync('umount', [rootDir], { stdio: 'ignore', timeout: 30_000 })
  } catch {
    // A process still holds a file open: detach now, the kernel frees the loop device once it is released.
    try {
      execFileSync('umount', ['-l', rootDir], { stdio: 'ignore', timeout: 30_000 })
    } catch {}
  }
}

/** Deletes the sandbox's directory and image (after the image was unmounted). */
export function removeDisk(rootDir: string): void {
  // Never recurse into a still-mounted image: that would wipe it without freeing anything.
  if (!isMountPoint(rootDir)) rmSync(rootDir, { recursive: true, force: true })
  rmSync(diskImageOf(rootDir), { force: true })
}
