import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { normalizeSandboxPath, PathEscapeError, resolveSandboxPath } from './paths.js'

describe('normalizeSandboxPath', () => {
  it('resolves relative paths and ~ against /home/user', () => {
    expect(normalizeSandboxPath('a/b.txt')).toBe('/home/user/a/b.txt')
    expect(normalizeSandboxPath('~/x')).toBe('/home/user/x')
    expect(normalizeSandboxPath('/tmp/./y/../z')).toBe('/tmp/z')
  })
  it('refuses climbing above /, control characters, empty and huge paths', () => {
    expect(() => normalizeSandboxPath('../../../../..')).toThrow(PathEscapeError)
    expect(() => normalizeSandboxPath('a\u0000b')).toThrow(PathEscapeError)
    expect(() => normalizeSandboxPath('')).toThrow(PathEscapeError)
    expect(() => normalizeSandboxPath(`/home/user/${'a'.repeat(5000)}`)).toThrow(PathEscapeError)
  })
})

describe('resolveSandboxPath', () => {
  const root = mkdtempSync(join(tmpdir(), 'sandkeep-paths-'))
  mkdirSync(join(root, 'home/user/sub'), { recursive: true })
  mkdirSync(join(root, 'tmp'), { recursive: true })
  symlinkSync('/etc', join(root, 'home/user/etc-link'))
  symlinkSync('sub', join(root, 'home/user/inner-link'))
  afterAll(() => rmSync(root, { recursive: true, force: true }))

  it('maps sandbox paths under the root', () => {
    expect(resolveSandboxPath(root, '/home/user/sub/new.txt')).toBe(`${root}/home/user/sub/new.txt`)
    expect(resolveSandboxPath(root, '/tmp/x')).toBe(`${root}/tmp/x`)
    expect(resolveSandboxPath(root, 'inner-link/file')).toBe(`${root}/home/user/inner-link/file`)
  })
  it('refuses paths outside the writable tree and symlinks that leave the sandbox', () => {
    expect(() => resolveSandboxPath(root, '/etc/passwd')).toThrow(PathEscapeError)
    expect(() => resolveSandboxPath(root, '../../etc/passwd')).toThrow(PathEscapeError)
    expect(() => resolveSandboxPath(root, '/home/user/etc-link/passwd')).toThrow(PathEscapeError)
    expect(() => resolveSandboxPath(root, '/home/user/etc-link')).toThrow(PathEscapeError)
    expect(() => resolveSandboxPath(root, '/home')).toThrow(PathEscapeError)
  })
})
