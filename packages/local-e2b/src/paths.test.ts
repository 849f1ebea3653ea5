import { describe, expect, it } from 'vitest'
import { normalizeSandboxPath, PathEscapeError } from './paths.js'

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
