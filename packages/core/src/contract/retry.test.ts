import { describe, expect, it } from 'vitest'
import { SandkeepError } from './errors.js'
import { retryProviderCall } from './retry.js'

describe('retryProviderCall', () => {
  it('never retries a full quota, even one marked retryable (issue 30.10): waiting does not free it', async () => {
    let calls = 0
    const quota = new SandkeepError({
      code: 'QUOTA_EXCEEDED',
      message: 'snapshot quota full',
      retryable: true,
    })
    await expect(
      retryProviderCall(
        async () => {
          calls += 1
          throw quota
        },
        { retries: 4, minTimeoutMs: 1, maxTimeoutMs: 2 },
      ),
    ).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' })
    expect(calls).toBe(1)
  })

  it('still retries a rate limit', async () => {
    let calls = 0
    const limited = new SandkeepError({ code: 'SANDBOX_UNAVAILABLE', message: '429', retryable: true })
    const result = await retryProviderCall(
      async () => {
        calls += 1
        if (calls < 3) throw limited
        return 'ok'
      },
      { retries: 4, minTimeoutMs: 1, maxTimeoutMs: 2 },
    )
    expect([result, calls]).toEqual(['ok', 3])
  })
})
