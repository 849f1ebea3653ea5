import {
  AuthenticationError,
  CommandExitError,
  FileNotFoundError,
  InvalidArgumentError,
  RateLimitError,
  SandboxError,
  SandboxNotFoundError,
  ServiceBusyError,
  TimeoutError,
} from 'e2b'
import { describe, expect, it } from 'vitest'
import { fromE2BError } from './errors.js'

const at = { operation: 'connect', sandboxId: 'sbx1' }

function withStatus(status: number, message = 'boom'): SandboxError {
  const error = new SandboxError(`${status}: ${message}`)
  error.statusCode = status
  return error
}

describe('fromE2BError', () => {
  it.each([
    [new SandboxNotFoundError('gone'), 'SANDBOX_NOT_FOUND', false],
    [new AuthenticationError('bad key'), 'PROVIDER_AUTH', false],
    [new RateLimitError('slow down'), 'SANDBOX_UNAVAILABLE', true],
    [new ServiceBusyError('busy'), 'SANDBOX_UNAVAILABLE', true],
    [new FileNotFoundError('no file'), 'FILE_NOT_FOUND', false],
    [new TimeoutError('late'), 'TIMEOUT', false],
    [new InvalidArgumentError('bad'), 'INVALID_ARGUMENT', false],
    [withStatus(502), 'SANDBOX_UNAVAILABLE', true],
    [withStatus(500), 'SANDBOX_UNAVAILABLE', true],
    [withStatus(409, 'sandbox is transitioning'), 'SANDBOX_UNAVAILABLE', true],
    [withStatus(404), 'SANDBOX_NOT_FOUND', false],
    [withStatus(401), 'PROVIDER_AUTH', false],
    [withStatus(400), 'INVALID_ARGUMENT', false],
    // The code interpreter's errors read `<status> <status text>`.
    [new SandboxError('400 Bad Request'), 'INVALID_ARGUMENT', false],
    [new SandboxError('500 Internal Server Error'), 'SANDBOX_UNAVAILABLE', true],
    [
      Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }),
      'SANDBOX_UNAVAILABLE',
      true,
    ],
    [new Error('something odd'), 'PROVIDER_ERROR', false],
  ])('%s becomes %s (retryable %s), keeping the cause', (error, code, retryable) => {
    const mapped = fromE2BError(error, at)
    expect(mapped.code).toBe(code)
    expect(mapped.retryable).toBe(retryable)
    expect(mapped.cause).toBe(error)
    expect(mapped.sandboxId).toBe('sbx1')
  })

  it('a 404 about a snapshot is SNAPSHOT_NOT_FOUND; its other failures map as any call', () => {
    const about = { operation: 'createFromSnapshot', snapshotId: 'abc:default' }
    const missing = fromE2BError(withStatus(404, "template 'abc:default' not found"), about)
    expect(missing).toMatchObject({ code: 'SNAPSHOT_NOT_FOUND', retryable: false })
    expect(missing.message).toContain('abc:default')
    expect(fromE2BError(withStatus(503), about)).toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
      retryable: true,
    })
    expect(fromE2BError(new RateLimitError('limit'), about).code).toBe('SANDBOX_UNAVAILABLE')
    expect(fromE2BError(withStatus(401), about).code).toBe('PROVIDER_AUTH')
  })

  it("a full snapshot quota (507, or an older host's 429 'snapshot limit reached') is QUOTA_EXCEEDED, not retried", () => {
    const about = { operation: 'createSnapshot', sandboxId: 'sbx1' }
    const full = fromE2BError(withStatus(507, 'snapshot quota exceeded: at most 2 snapshots'), about)
    expect(full).toMatchObject({ code: 'QUOTA_EXCEEDED', retryable: false })
    expect(full.message).toContain('delete snapshots')
    const before = new RateLimitError(
      'Rate limit exceeded, please try again later - snapshot limit reached: at most 2',
    )
    expect(fromE2BError(before, about)).toMatchObject({ code: 'QUOTA_EXCEEDED', retryable: false })
    // A rate limit is still one.
    expect(fromE2BError(new RateLimitError('Rate limit exceeded'), about)).toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
      retryable: true,
    })
  })

  it('tells what to do in the message and never includes a key', () => {
    const mapped = fromE2BError(new AuthenticationError('Unauthorized, please check your credentials.'), at)
    expect(mapped.message).toMatch(/E2B_API_KEY/)
    expect(mapped.message).not.toMatch(/e2b_[0-9a-f]{10}/)
  })

  it('leaves a CommandExitError to the handle (it is not mapped to a code here)', () => {
    const exit = new CommandExitError({ exitCode: 2, stdout: '', stderr: 'x', error: undefined })
    expect(fromE2BError(exit, at).code).toBe('PROVIDER_ERROR')
  })
})
