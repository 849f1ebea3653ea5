import { describe, expect, it } from 'vitest'
import { SandkeepError } from './errors.js'
import {
  snapshotBaseName,
  validateConversationId,
  validateCreateSnapshotOptions,
  validateListSnapshotsOptions,
  validateNetworkPolicy,
  validatePort,
  validateSessionKey,
  validateSnapshotId,
  validateTenant,
} from './validation.js'

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return SandkeepError.isInstance(error) ? error.code : 'not-a-sandkeep-error'
  }
  return undefined
}

describe('validateConversationId', () => {
  it('accepts printable text of any script, separators and glob characters included', () => {
    for (const id of ['conv-42', 'a:b', '{x}', '*', 'ünïcödé 会话 🧪', 'x'.repeat(512), '€'.repeat(170)]) {
      expect(validateConversationId(id)).toBe(id)
    }
  })

  it('counts UTF-8 bytes, not characters: 512 bytes pass, 513 fail', () => {
    expect(validateConversationId('é'.repeat(256))).toHaveLength(256) // 512 bytes
    expect(codeOf(() => validateConversationId(`${'é'.repeat(256)}a`))).toBe('INVALID_ARGUMENT')
    expect(codeOf(() => validateConversationId('x'.repeat(513)))).toBe('INVALID_ARGUMENT')
    expect(codeOf(() => validateConversationId('🧪'.repeat(129)))).toBe('INVALID_ARGUMENT') // 516 bytes
  })

  it('refuses empty strings, control characters and non-strings', () => {
    for (const bad of ['', 'a\nb', 'a\u0000b', '\t', 'x\u007f', 'x\u0085', 'x\u2028', '\ud800']) {
      expect(
        codeOf(() => validateConversationId(bad)),
        JSON.stringify(bad),
      ).toBe('INVALID_ARGUMENT')
    }
    for (const bad of [undefined, null, 42, {}, ['a'], Symbol('x')]) {
      expect(codeOf(() => validateConversationId(bad))).toBe('INVALID_ARGUMENT')
    }
  })

  it('says what to do in its message', () => {
    try {
      validateConversationId('x'.repeat(600))
      expect.unreachable()
    } catch (error) {
      expect((error as Error).message).toMatch(/600 bytes; the limit is 512/)
    }
  })
})

describe('validateTenant', () => {
  it('defaults to "default" and accepts the allowed alphabet', () => {
    expect(validateTenant(undefined)).toBe('default')
    expect(validateTenant('acme.prod_eu-1')).toBe('acme.prod_eu-1')
    expect(validateTenant('t'.repeat(64))).toHaveLength(64)
  })

  it('refuses separators, braces, globs, unicode, empty and long tenants', () => {
    for (const bad of ['', 'a:b', '{x}', 'a*', 'a b', 'ü', 'a\nb', 't'.repeat(65), 'a/b']) {
      expect(
        codeOf(() => validateTenant(bad)),
        JSON.stringify(bad),
      ).toBe('INVALID_ARGUMENT')
    }
    expect(codeOf(() => validateTenant(7))).toBe('INVALID_ARGUMENT')
    expect(codeOf(() => validateTenant(null))).toBe('INVALID_ARGUMENT')
  })

  it('validates both parts of a key', () => {
    expect(validateSessionKey('c', 'acme')).toEqual({ tenant: 'acme', conversationId: 'c' })
    expect(codeOf(() => validateSessionKey('c', 'a:b'))).toBe('INVALID_ARGUMENT')
  })

  it('takes ports 1 to 65535 only', () => {
    expect(validatePort(1)).toBe(1)
    expect(validatePort(65_535)).toBe(65_535)
    for (const bad of [0, -1, 65_536, 8000.5, Number.NaN, '8000', null]) {
      expect(
        codeOf(() => validatePort(bad)),
        String(bad),
      ).toBe('INVALID_ARGUMENT')
    }
  })

  it('takes a network policy of internet access and destination lists, nothing else', () => {
    const policy = {
      allowInternetAccess: false,
      allowOut: ['*.pypi.org', '10.0.0.0/8'],
      denyOut: ['0.0.0.0/0'],
    }
    expect(validateNetworkPolicy(policy)).toBe(policy)
    expect(validateNetworkPolicy({})).toEqual({})
    for (const bad of [
      null,
      [],
      { allowInternetAccess: 'yes' },
      { allowOut: 'pypi.org' },
      { denyOut: [''] },
      { allowOut: ['a b'] },
      { allowOut: ['a\nb'] },
      { rules: {} },
    ]) {
      expect(
        codeOf(() => validateNetworkPolicy(bad)),
        JSON.stringify(bad),
      ).toBe('INVALID_ARGUMENT')
    }
  })

  it('takes snapshot ids of printable text up to 256 bytes, and snapshot names E2B takes', () => {
    expect(validateSnapshotId('local/base-env:default')).toBe('local/base-env:default')
    expect(validateSnapshotId('é'.repeat(128))).toBe('é'.repeat(128))
    for (const bad of ['', 'é'.repeat(128) + 'x', 'a\nb', 'a\u0000b', 42, undefined]) {
      expect(
        codeOf(() => validateSnapshotId(bad)),
        String(bad),
      ).toBe('INVALID_ARGUMENT')
    }
    validateCreateSnapshotOptions(undefined)
    validateCreateSnapshotOptions({ name: 'sandkeep-ab12-3.v_1', signal: new AbortController().signal })
    validateCreateSnapshotOptions({ name: `a${'b'.repeat(127)}` })
    for (const bad of [
      null,
      { name: '' },
      { name: '-leading' },
      { name: 'has space' },
      { name: 'team/name' },
      { name: 'name:tag' },
      { name: `a${'b'.repeat(128)}` },
      { name: 7 },
      { tag: 'v1' },
    ]) {
      expect(
        codeOf(() => validateCreateSnapshotOptions(bad)),
        JSON.stringify(bad),
      ).toBe('INVALID_ARGUMENT')
    }
  })

  it('takes listSnapshots options: a name prefix, a limit of 1 to 1000, a cursor', () => {
    validateListSnapshotsOptions(undefined)
    validateListSnapshotsOptions({ namePrefix: '', limit: 1000, cursor: 'next' })
    validateListSnapshotsOptions({ namePrefix: 'sandkeep-ab12-' })
    for (const bad of [
      { namePrefix: 'a/b' },
      { namePrefix: 'a:b' },
      { namePrefix: 'x'.repeat(129) },
      { limit: 0 },
      { limit: 1.5 },
      { cursor: '' },
      { sandboxId: 'x' },
    ]) {
      expect(
        codeOf(() => validateListSnapshotsOptions(bad)),
        JSON.stringify(bad),
      ).toBe('INVALID_ARGUMENT')
    }
  })
})

describe('snapshotBaseName', () => {
  it('takes the part after the last slash and before a tag', () => {
    expect(snapshotBaseName('team-slug/sandkeep-ab-3:default')).toBe('sandkeep-ab-3')
    expect(snapshotBaseName('sandkeep-ab-3:v1')).toBe('sandkeep-ab-3')
    expect(snapshotBaseName('local/base-env')).toBe('base-env')
    expect(snapshotBaseName('plain')).toBe('plain')
    expect(snapshotBaseName('a/b/c:t')).toBe('c')
  })
})
