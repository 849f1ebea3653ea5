// The machine-wide claims of host id ranges: lowest free first, given back on release, claimed again after
// a restart, and a dead claim taken over only once its owner no longer lists it.
import { execFileSync } from 'node:child_process'
import { chownSync, lstatSync, mkdirSync, mkdtempSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { FIRST_HOST_ID, hostIdOf, ID_RANGE_SIZE, IdRanges, rebaseOwnership } from './id-ranges.js'

const dirs: string[] = []
afterEach(() => {
  // rm(1), which walks relative to each directory: Node's rmSync gives up on a path past 4,096 bytes.
  for (const dir of dirs.splice(0)) execFileSync('rm', ['-rf', dir])
})

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sk-id-ranges-'))
  dirs.push(dir)
  return dir
}

/** Writes a registry listing `rootDir` on range `index`. */
function registryListing(path: string, rootDir: string, index: number): void {
  writeFileSync(path, JSON.stringify({ version: 1, sandboxes: [{ rootDir, idRange: index }] }))
}

describe('IdRanges', () => {
  it('maps ids 0-65535 of each range onto host ids of its own', () => {
    expect(hostIdOf(0, 0)).toBe(FIRST_HOST_ID)
    expect(hostIdOf(2, 1000)).toBe(FIRST_HOST_ID + 2 * ID_RANGE_SIZE + 1000)
  })

  it('hands out the lowest free range, takes a released one back, and claims its own again', () => {
    const dir = scratch()
    const ranges = new IdRanges(dir, join(dir, 'registry.json'))
    expect(ranges.allocate('/state/a')).toBe(0)
    expect(ranges.allocate('/state/b')).toBe(1)
    ranges.release(0, '/state/a')
    expect(ranges.allocate('/state/c')).toBe(0)
    // A restart of the same host on the same registry: its claims are its own.
    const restarted = new IdRanges(dir, join(dir, 'registry.json'))
    expect(restarted.reclaim(1, '/state/b')).toBe(true)
    expect(restarted.reclaim(0, '/state/b')).toBe(false)
    // Releasing someone else's range does nothing.
    restarted.release(0, '/state/b')
    expect(restarted.allocate('/state/d')).toBe(2)
  })

  it('never takes over a live or young claim of another host, takes over a dead one', () => {
    const dir = scratch()
    const otherRegistry = join(dir, 'other-registry.json')
    const other = new IdRanges(dir, otherRegistry)
    expect(other.allocate('/other/a')).toBe(0)
    const mine = new IdRanges(dir, join(dir, 'registry.json'))
    // Young: its host may be creating the sandbox right now (not yet in its registry).
    expect(mine.reclaim(0, '/mine/a')).toBe(false)
    const old = new Date(Date.now() - 3600_000)
    utimesSync(join(dir, '0'), old, old)
    // Live: its registry still lists it.
    registryListing(otherRegistry, '/other/a', 0)
    expect(mine.reclaim(0, '/mine/a')).toBe(false)
    // Dead: its registry no longer lists it (the sandbox or the state dir went without a release).
    registryListing(otherRegistry, '/other/b', 5)
    expect(mine.reclaim(0, '/mine/a')).toBe(true)
    expect(other.reclaim(0, '/other/a')).toBe(false)
  })
})

describe('rebaseOwnership', () => {
  it("gives a sandbox's files, links included and not followed, to its new range", () => {
    const dir = scratch()
    mkdirSync(join(dir, 'sub'))
    writeFileSync(join(dir, 'sub/file'), 'x')
    writeFileSync(join(dir, 'foreign'), 'x')
    symlinkSync('/etc/passwd', join(dir, 'link'))
    for (const name of ['sub', 'sub/file']) chownSync(join(dir, name), hostIdOf(1, 1000), hostIdOf(1, 1000))
    chownSync(join(dir, 'foreign'), 4242, 4242)
    rebaseOwnership([dir], 1, 7)
    expect(lstatSync(join(dir, 'sub/file')).uid).toBe(hostIdOf(7, 1000))
    expect(lstatSync(join(dir, 'sub')).gid).toBe(hostIdOf(7, 1000))
    expect(lstatSync(join(dir, 'foreign')).uid).toBe(4242)
    expect(lstatSync('/etc/passwd').uid).toBe(0)
  })

  it('moves what a host before ranges made (user 1500000, root templates as root) onto a range', () => {
    const dir = scratch()
    writeFileSync(join(dir, 'mine'), 'x')
    chownSync(join(dir, 'mine'), 1_500_000, 1_500_000)
    rebaseOwnership([dir], 'legacy', 3)
    expect(lstatSync(join(dir, 'mine')).uid).toBe(hostIdOf(3, 1000))
    expect(lstatSync(dir).uid).toBe(hostIdOf(3, 0))
  })

  it('moves every entry when the workspace holds a path longer than 4,096 bytes', () => {
    const dir = scratch()
    const owner = hostIdOf(1, 1000)
    for (let index = 0; index < 60; index++) {
      writeFileSync(join(dir, `file-${index}`), 'x')
      chownSync(join(dir, `file-${index}`), owner, owner)
    }
    // 20 levels of 250-byte names (over 5,000 bytes), made and owned relative to each level as a shell can.
    const name = 'd'.repeat(250)
    execFileSync('bash', [
      '-c',
      `cd "$1" && for i in $(seq 20); do mkdir ${name} && chown ${owner}:${owner} ${name} && cd ${name}; done && echo deep > deep-file && chown ${owner}:${owner} deep-file`,
      'bash',
      dir,
    ])
    const errors = rebaseOwnership([dir], 1, 7)
    const owners = execFileSync('find', [dir, '-mindepth', '1', '-printf', '%U\n'], { encoding: 'utf8' })
      .trim()
      .split('\n')
    expect(owners).toHaveLength(60 + 20 + 1)
    expect(new Set(owners)).toEqual(new Set([String(hostIdOf(7, 1000))]))
    expect(errors).toEqual([])
  })
})
