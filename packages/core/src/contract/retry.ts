import pRetry from 'p-retry'
import { SandkeepError } from './errors.js'

/** How transient provider failures are retried. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number
  /** First backoff delay, ms. */
  minTimeoutMs: number
  /** Largest backoff delay, ms. */
  maxTimeoutMs: number
}

/** The manager's default: 4 retries, 100 ms doubling to at most 3 s, randomised. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 4, minTimeoutMs: 100, maxTimeoutMs: 3000 }

// A Retry-After longer than this is not waited for: the call fails and the caller decides.
const MAX_RETRY_AFTER_MS = 60_000

/**
 * Runs a provider call, retrying only failures the provider marked retryable (SANDBOX_UNAVAILABLE: 5xx,
 * network, 409 still transitioning, 429). A `Retry-After` the provider reported is honoured: the wait before
 * the next attempt is at least that long. Anything else (auth, bad argument, not found) is thrown at once.
 * Errors that are not SandkeepErrors become PROVIDER_ERROR with the original as `cause`.
 */
export async function retryProviderCall<T>(
  operation: () => Promise<T>,
  policy: RetryPolicy,
  options: { signal?: AbortSignal; onRetry?: (error: SandkeepError, attempt: number) => void } = {},
): Promise<T> {
  try {
    return await pRetry(operation, {
      retries: policy.retries,
      minTimeout: policy.minTimeoutMs,
      maxTimeout: policy.maxTimeoutMs,
      factor: 2,
      randomize: true,
      ...(options.signal ? { signal: options.signal } : {}),
      // A full quota is not a rate limit: waiting does not free it, so it is never retried.
      shouldRetry: ({ error }) =>
        SandkeepError.isInstance(error) && error.retryable && error.code !== 'QUOTA_EXCEEDED',
      onFailedAttempt: async ({ error, attemptNumber, retriesLeft, retryDelay }) => {
        if (!SandkeepError.isInstance(error) || !error.retryable || retriesLeft === 0) return
        if (error.code === 'QUOTA_EXCEEDED') return
        options.onRetry?.(error, attemptNumber)
        const asked = error.retryAfterMs
        if (asked !== undefined && asked > retryDelay && asked <= MAX_RETRY_AFTER_MS) {
          // p-retry waits `retryDelay` after this callback; wait the rest of what the platform asked for.
          await sleep(asked - retryDelay, options.signal, 'reject')
        }
      },
    })
  } catch (error) {
    throw toSandkeepError(error, options.signal)
  }
}

/** Normalises anything a provider threw into a SandkeepError, keeping the original as `cause`. */
export function toSandkeepError(error: unknown, signal?: AbortSignal): SandkeepError {
  if (SandkeepError.isInstance(error)) return error
  if (signal?.aborted) {
    return new SandkeepError({
      code: 'ABORTED',
      message: 'The turn was aborted by its abort signal.',
      cause: error,
    })
  }
  const message = error instanceof Error ? error.message : String(error)
  return new SandkeepError({
    code: 'PROVIDER_ERROR',
    message: `The sandbox provider failed: ${message}`,
    cause: error,
  })
}

/**
 * Waits `ms`. When `signal` fires first (or has already fired), `onAbort` says what happens: `'reject'` with
 * the signal's reason (a wait the caller must not outlive: retries, creation polls), or `'resolve'` at once
 * (a wait inside a loop that checks the signal itself: health-check polls).
 */
export function sleep(
  ms: number,
  signal: AbortSignal | undefined,
  onAbort: 'reject' | 'resolve',
): Promise<void> {
  if (signal?.aborted) return onAbort === 'reject' ? Promise.reject(signal.reason) : Promise.resolve()
  return new Promise((resolve, reject) => {
    const aborted = () => {
      clearTimeout(timer)
      if (onAbort === 'reject') reject(signal?.reason)
      else resolve()
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', aborted)
      resolve()
    }, ms)
    signal?.addEventListener('abort', aborted, { once: true })
  })
}
