// The content store alone: a delete never frees a blob a capture in progress holds, what a capture wrote is
// freed if it is given up, unchanged files are not read again, and a capture materializes back whole.
import { execFileSync } from 'node:child_process'
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ContentStore } from './content-store.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) execFileSync('rm', ['-rf', dir])
})

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sk-content-store-'))
  dirs.push(dir)
  return dir
}

function blobsIn(snapshots: string): string[] {
  const blobs = join(snapshots, 'blobs')
  return readdirSync(blobs, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => readdirSync(join(blobs, entry.name)))
}

/** A file tree older than the store's racy window, so that a capture remembers it. */
function tree(top: string): void {
  mkdirSync(join(top, 'sub'), { recursive: true })
  writeFileSync(join(top, 'a.txt'), 'alpha')
  writeFileSync(join(top, 'sub/b.txt'), 'beta')
  symlinkSync('a.txt', join(top, 'link'))
  const old = new Date(Date.now() - 60_000)
  execFileSync('touch', ['-h', '-d', old.toISOString(), join(top, 'a.txt'), join(top, 'sub/b.txt')])
}

describe('ContentStore', () => {
  it('a delete frees no blob a capture in progress holds; giving the capture up frees it', () => {
    const root = scratch()
    const source = join(root, 'source')
    tree(source)
    const store = new ContentStore(join(root, 'snapshots'), () => {})
    store.load([])
    const first = store.capture(source, 'sbx')
    store.writeManifest('first.json', first.manifest)
    store.keep(first.manifest)
    first.release()
    // A second capture starts (holding the same blobs) while the first snapshot is deleted.
    const second = store.capture(source, 'sbx')
    store.drop('first.json', first.manifest)
    expect(blobsIn(join(root, 'snapshots')).sort()).toHaveLength(2)
    second.release()
    expect(blobsIn(join(root, 'snapshots'))).toEqual([])
  })

  it('reads only what changed since the previous capture, and materializes a capture back whole', async () => {
    const root = scratch()
    const source = join(root, 'source')
    tree(source)
    // touch set the ctimes to now: a file changed within the store's racy window is not remembered.
    await new Promise((resolve) => setTimeout(resolve, 150))
    const store = new ContentStore(join(root, 'snapshots'), () => {})
    store.load([])
    const first = store.capture(source, 'sbx')
    expect(first.filesRead).toBe(2)
    store.keep(first.manifest)
    store.remember('sbx', first)
    first.release()
    writeFileSync(join(source, 'sub/b.txt'), 'beta, changed')
    execFileSync('ln', [join(source, 'sub/b.txt'), join(source, 'hard')])
    const second = store.capture(source, 'sbx')
    expect(second.filesRead).toBe(1)
    expect(second.newBlobs).toBe(1)
    const restored = join(root, 'restored')
    store.materialize(second.manifest, restored)
    expect(readFileSync(join(restored, 'a.txt'), 'utf8')).toBe('alpha')
    expect(readFileSync(join(restored, 'hard'), 'utf8')).toBe('beta, changed')
    expect(statSync(join(restored, 'hard')).ino).toBe(statSync(join(restored, 'sub/b.txt')).ino)
    expect(execFileSync('readlink', [join(restored, 'link')], { encoding: 'utf8' }).trim()).toBe('a.txt')
    // Times come back to the microsecond (the platform's utimes takes seconds as a double).
    expect(
      Math.abs(statSync(join(restored, 'a.txt')).mtimeMs - statSync(join(source, 'a.txt')).mtimeMs),
    ).toBeLessThan(0.01)
    second.release()
  })
})
