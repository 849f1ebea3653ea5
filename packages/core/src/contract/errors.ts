/**
 * Every failure sandkeep reports has one of these codes. The codes are stable: match on them, not on messages.
 */
export const SandkeepErrorCode = {
  /** A caller passed a value sandkeep cannot use (bad id, wrong type, unknown option). Nothing was done. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** The session store could not be reached or did not answer in time. Nothing was assumed about the session. */
  STORE_UNAVAILABLE: 'STORE_UNAVAILABLE',
  /** A stored record could not be read (bad JSON, unknown schema). The record was left untouched. */
  STORE_CORRUPT: 'STORE_CORRUPT',
  /** The session is held in a way that does not allow this call now (for example a creation still under way). */
  SESSION_BUSY: 'SESSION_BUSY',
  /** This holder's lease expired or was superseded (stale fencing token); its write was refused. */
  LEASE_LOST: 'LEASE_LOST',
  /** The provider says the sandbox does not exist (killed, or past the platform's retention). */
  SANDBOX_NOT_FOUND: 'SANDBOX_NOT_FOUND',
  /** The provider could not be reached or kept failing (5xx, network, still transitioning) after retries. */
  SANDBOX_UNAVAILABLE: 'SANDBOX_UNAVAILABLE',
  /** The sandbox belongs to another tenant; it was not used. */
  TENANT_MISMATCH: 'TENANT_MISMATCH',
  /** The provider refused the credentials (missing or wrong API key). */
  PROVIDER_AUTH: 'PROVIDER_AUTH',
  /** The provider was asked for something it cannot do (for example pause on a platform without pause). */
  CAPABILITY_UNSUPPORTED: 'CAPABILITY_UNSUPPORTED',
  /** A health check marked `required` still failed after its repair. */
  HEALTH_CHECK_FAILED: 'HEALTH_CHECK_FAILED',
  /** A file or directory inside the sandbox does not exist. */
  FILE_NOT_FOUND: 'FILE_NOT_FOUND',
  /** A command, code cell or provider call took longer than allowed. */
  TIMEOUT: 'TIMEOUT',
  /** The caller's AbortSignal fired. */
  ABORTED: 'ABORTED',
  /** The session's journal is over its step-count or byte limit; the step was not recorded. */
  JOURNAL_FULL: 'JOURNAL_FULL',
  /** The provider failed in a way sandkeep does not classify; `cause` holds the original error. */
  PROVIDER_ERROR: 'PROVIDER_ERROR',
  /** The turn was already ended; its sandbox handle may no longer be used. */
  TURN_ENDED: 'TURN_ENDED',
  /** The sandbox exists but was paused by someone else while a turn used it; a new turn resumes it. */
  SANDBOX_PAUSED: 'SANDBOX_PAUSED',
  /** The platform has no snapshot of that id (deleted, never made, or another team's). */
  SNAPSHOT_NOT_FOUND: 'SNAPSHOT_NOT_FOUND',
  /**
   * A restore, rewind or fork named a checkpoint the conversation does not have: unknown, another
   * conversation's or tenant's, or pruned (the message says which). Nothing was changed.
   */
  CHECKPOINT_NOT_FOUND: 'CHECKPOINT_NOT_FOUND',
  /**
   * A quota is used up: the tenant's checkpoint limit (`checkpoints.tenantLimits`), or the platform's
   * (a full snapshot quota is not a rate limit and is not retried).
   */
  QUOTA_EXCEEDED: 'QUOTA_EXCEEDED',
  /** A session with that conversation id already exists (a fork must start a new one). Nothing was written. */
  SESSION_EXISTS: 'SESSION_EXISTS',
  /** The session manager was closed (`sessions.close()`): it begins no turn and makes no call any more. */
  MANAGER_CLOSED: 'MANAGER_CLOSED',
} as const

export type SandkeepErrorCode = (typeof SandkeepErrorCode)[keyof typeof SandkeepErrorCode]

const marker = 'sandkeep.error'
const symbol = Symbol.for(marker)

export interface SandkeepErrorOptions {
  /** One of {@link SandkeepErrorCode}. */
  code: SandkeepErrorCode
  /** What went wrong and what to do about it, in one or two sentences. */
  message: string
  /** The underlying error (SDK error, Redis error), kept as is. */
  cause?: unknown
  /** Tenant of the session concerned, when known. */
  tenant?: string
  /** Conversation id of the session concerned, when known. */
  conversationId?: string
  /** Sandbox id concerned, when known. */
  sandboxId?: string
  /** True when retrying the same call later may succeed (store or provider temporarily unavailable). */
  retryable?: boolean
  /** When the backend said how long to wait before retrying (HTTP `Retry-After`), in ms. */
  retryAfterMs?: number
}

/**
 * The one error class sandkeep throws. Use {@link SandkeepError.isInstance} rather than `instanceof`, which
 * fails when two copies of `@sandkeep/core` end up in one program.
 */
export class SandkeepError extends Error {
  readonly [symbol] = true
  override readonly name = 'SandkeepError'
  /** Stable machine-readable code. */
  readonly code: SandkeepErrorCode
  /** Tenant of the session concerned, when known. */
  readonly tenant: string | undefined
  /** Conversation id of the session concerned, when known. */
  readonly conversationId: string | undefined
  /** Sandbox id concerned, when known. */
  readonly sandboxId: string | undefined
  /** True when retrying the same call later may succeed. */
  readonly retryable: boolean
  /** How long the backend asked callers to wait before retrying (HTTP `Retry-After`), ms; undefined when it did not say. */
  readonly retryAfterMs: number | undefined

  constructor(options: SandkeepErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = options.code
    this.tenant = options.tenant
    this.conversationId = options.conversationId
    this.sandboxId = options.sandboxId
    this.retryable = options.retryable ?? false
    this.retryAfterMs = options.retryAfterMs
  }

  /** True for any SandkeepError, including one thrown by another copy of this package. */
  static isInstance(error: unknown): error is SandkeepError {
    return (
      typeof error === 'object' &&
      error !== null &&
      (error as Record<symbol, unknown>)[symbol] === true &&
      typeof (error as { code?: unknown }).code === 'string'
    )
  }

  /** True when `error` is a SandkeepError with the given code. */
  static hasCode(error: unknown, code: SandkeepErrorCode): error is SandkeepError {
    return SandkeepError.isInstance(error) && error.code === code
  }

  /** A plain object for logs and JSON output; never contains secrets. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      tenant: this.tenant,
      conversationId: this.conversationId,
      sandboxId: this.sandboxId,
      retryable: this.retryable,
      ...(this.retryAfterMs === undefined ? {} : { retryAfterMs: this.retryAfterMs }),
    }
  }
}
