import { describe, expect, it, vi } from 'vitest'
import { SandkeepError, SandkeepErrorCode } from './errors.js'

describe('SandkeepError', () => {
  it('carries code, cause and structured fields', () => {
    const cause = new Error('ECONNREFUSED')
    const error = new SandkeepError({
      code: 'STORE_UNAVAILABLE',
      message: 'Redis did not answer within 2000 ms; check REDIS_URL.',
      cause,
      tenant: 'acme',
      conversationId: 'c1',
      sandboxId: 'sbx1',
      retryable: true,
    })
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('SandkeepError')
    expect(error.code).toBe('STORE_UNAVAILABLE')
    expect(error.cause).toBe(cause)
    expect([error.tenant, error.conversationId, error.sandboxId]).toEqual(['acme', 'c1', 'sbx1'])
    expect(error.retryable).toBe(true)
    expect(JSON.parse(JSON.stringify(error))).toMatchObject({ code: 'STORE_UNAVAILABLE', tenant: 'acme' })
  })

  it('lists every required code once, each equal to its own name', () => {
    const required = [
      'INVALID_ARGUMENT',
      'STORE_UNAVAILABLE',
      'STORE_CORRUPT',
      'SESSION_BUSY',
      'LEASE_LOST',
      'SANDBOX_NOT_FOUND',
      'SANDBOX_UNAVAILABLE',
      'TENANT_MISMATCH',
      'PROVIDER_AUTH',
      'CAPABILITY_UNSUPPORTED',
      'HEALTH_CHECK_FAILED',
    ]
    for (const code of required) expect(SandkeepErrorCode).toHaveProperty(code, code)
    for (const [key, value] of Object.entries(SandkeepErrorCode)) expect(value).toBe(key)
  })

  it('isInstance recognises errors from another copy of the class, and nothing else', async () => {
    // A second, independent copy of the module: what happens when two versions of the package are installed.
    vi.resetModules()
    const copy = await import('./errors.js')
    expect(copy.SandkeepError).not.toBe(SandkeepError)
    const foreign = new copy.SandkeepError({ code: 'LEASE_LOST', message: 'lost' })
    expect(foreign instanceof SandkeepError).toBe(false)
    expect(SandkeepError.isInstance(foreign)).toBe(true)
    expect(SandkeepError.hasCode(foreign, 'LEASE_LOST')).toBe(true)
    expect(SandkeepError.hasCode(foreign, 'STORE_CORRUPT')).toBe(false)
    expect(copy.SandkeepError.isInstance(new SandkeepError({ code: 'TIMEOUT', message: 't' }))).toBe(true)
    for (const other of [new Error('x'), { code: 'LEASE_LOST' }, null, undefined, 'LEASE_LOST']) {
      expect(SandkeepError.isInstance(other)).toBe(false)
    }
  })
})
