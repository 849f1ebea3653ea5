// SandboxFs on a plain directory: in-root symlink resolution, refusals, ownership of what
// it creates, no partial file on a failed write, FIFOs never opened. The race itself is test/file-race.test.ts.
import { execFileSync } from 'node:child_process'
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PathEscapeError } from './paths.js'
import { SandboxFs } from './sandbox-fs.js'

describe('SandboxFs', () => {
  let root: string
  let outside: string
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'sk-fs-root-'))
    // Not under /tmp: an absolute /tmp/... target is the sandbox's own /tmp.
    outside = mkdtempSync('/var/tmp/sk-fs-outside-')
    mkdirSync(join(root, 'home/user'), { recursive: true })
    mkdirSync(join(root, 'tmp'))
    writeFileSync(join(outside, 'secret'), 'host secret')
  })
  afterEach(() => {
    rmSync(root, { recursive: true, force: true })
    rmSync(outside, { recursive: true, force: true })
  })
  const home = (path = '') => join(root, 'home/user', path)
  const write = (fs: SandboxFs, path: string, text: string) =>
    fs.writeStream(path, Readable.from([Buffer.from(text)]))

  it('resolves symlinks as the sandbox sees them: absolute targets mean its own root', async () => {
    const fs = new SandboxFs(root)
    mkdirSync(home('real'))
    writeFileSync(home('real/a.txt'), 'inside')
    symlinkSync('/home/user/real', home('abs'))
    symlinkSync('real/a.txt', home('rel'))
    symlinkSync('/tmp', home('t'))
    expect((await fs.statFollowing('/home/user/abs/a.txt'))?.size).toBe(6)
    const { handle } = await fs.openRead('/home/user/rel')
    expect((await handle.readFile()).toString()).toBe('inside')
    await handle.close()
    expect(await write(fs, '/home/user/t/x', 'in tmp')).toBe('/tmp/x')
    expect(readFileSync(join(root, 'tmp/x'), 'utf8')).toBe('in tmp')
  })

  it('refuses links and .. leaving the writable tree, and link loops', async () => {
    const fs = new SandboxFs(root)
    symlinkSync(outside, home('out'))
    symlinkSync(join(outside, 'secret'), home('outf'))
    symlinkSync('../../../../../../etc', home('up'))
    symlinkSync('loop', home('loop'))
    await expect(fs.openRead('/home/user/out/secret')).rejects.toThrow(PathEscapeError)
    await expect(fs.openRead('/home/user/outf')).rejects.toThrow(PathEscapeError)
    await expect(fs.openRead('/home/user/up/passwd')).rejects.toThrow(PathEscapeError)
    await expect(fs.openRead('/home/user/../../etc/passwd')).rejects.toThrow(PathEscapeError)
    await expect(fs.openRead('/home/user/loop')).rejects.toThrow(/too many symlinks/)
    await expect(write(fs, '/home/user/out/new', 'no')).rejects.toThrow(PathEscapeError)
    await expect(fs.makeDir('/home/user/out/made')).rejects.toThrow(PathEscapeError)
    expect(readdirSync(outside)).toEqual(['secret'])
    // Removing or moving a link acts on the link, never on what it points to.
    await fs.remove('/home/user/out')
    await fs.move('/home/user/outf', '/home/user/moved')
    expect(lstatSync(home('moved')).isSymbolicLink()).toBe(true)
    expect(readdirSync(outside)).toEqual(['secret'])
  })

  it('gives what it creates to the sandbox owner, keeps an existing file owner and mode', async () => {
    const fs = new SandboxFs(root, () => ({ uid: 4321, gid: 4322 }))
    await write(fs, '/home/user/a/b/new.txt', 'new')
    await fs.makeDir('/home/user/made/deep')
    for (const path of ['a', 'a/b', 'a/b/new.txt', 'made', 'made/deep']) {
      expect([lstatSync(home(path)).uid, lstatSync(home(path)).gid], path).toEqual([4321, 4322])
    }
    writeFileSync(home('mine.txt'), 'old', { mode: 0o600 })
    await write(fs, '/home/user/mine.txt', 'replaced')
    expect(lstatSync(home('mine.txt')).uid).toBe(process.getuid?.())
    expect(lstatSync(home('mine.txt')).mode & 0o777).toBe(0o600)
    expect(readFileSync(home('mine.txt'), 'utf8')).toBe('replaced')
  })

  it('leaves no partial file when the source fails, and never opens a FIFO', async () => {
    const fs = new SandboxFs(root)
    writeFileSync(home('kept.txt'), 'old')
    const failing = new Readable({
      read() {
        this.push(Buffer.alloc(1024))
        this.destroy(new Error('client went away'))
      },
    })
    await expect(fs.writeStream('/home/user/kept.txt', failing)).rejects.toThrow('client went away')
    expect(readFileSync(home('kept.txt'), 'utf8')).toBe('old')
    expect(readdirSync(home())).toEqual(['kept.txt'])
    execFileSync('mkfifo', [home('pipe')])
    await expect(fs.openRead('/home/user/pipe')).rejects.toThrow(/not a regular file/)
  })
})
