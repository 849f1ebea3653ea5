// SDK errors become SandkeepErrors here, at the provider boundary, so that the session manager decides on
// codes (retry, recreate, throw) and never on an SDK's class names. The original error stays as `cause`.
import { SandkeepError, type SandkeepErrorCode } from '@sandkeep/core/provider'

/** What the failing call was about, for the error's fields and message. */
export interface ErrorContext {
  /** The operation, e.g. `connect` or `files.read`. */
  operation: string
  /** Sandbox concerned, when known. */
  sandboxId?: string
  /** File path concerned, when known. */
  path?: string
  /** Snapshot concerned (`createFromSnapshot`, `deleteSnapshot`): a 404 then means the snapshot is gone. */
  snapshotId?: string
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
])

function nameChain(error: unknown): string[] {
  // Class names along the prototype chain: robust when two copies of the SDK are loaded (instanceof fails).
  const names: string[] = []
  let proto = typeof error === 'object' && error !== null ? Object.getPrototypeOf(error) : null
  while (proto && proto !== Object.prototype) {
    const name = proto.constructor?.name
    if (typeof name === 'string') names.push(name)
    proto = Object.getPrototypeOf(proto)
  }
  if (error instanceof Error && error.name) names.push(error.name)
  return names
}

function networkCode(error: unknown): string | undefined {
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code
    current = (current as { cause?: unknown }).cause
  }
  if (error instanceof TypeError && /fetch failed|network|socket/i.test(error.message)) return 'network'
  return undefined
}

/** What a local-e2b host says of a full snapshot quota (now with 507; before, with 429). */
const QUOTA_MESSAGE = /snapshot quota exceeded|snapshot limit reached/i

function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown }).statusCode
  if (typeof status === 'number') return status
  // The SDK formats other API errors as `<status>: <message>`; the code interpreter's as `<status> <status text>`
  // (e.g. `400 Bad Request`), which must map by status too rather than fall through to PROVIDER_ERROR.
  const match = error instanceof Error ? /^(\d{3})(?:: | [A-Z])/.exec(error.message) : null
  return match ? Number(match[1]) : undefined
}

function retryAfterOf(error: unknown): number | undefined {
  const headers = (error as { headers?: { get?: (name: string) => string | null } }).headers
  const raw = typeof headers?.get === 'function' ? headers.get('retry-after') : undefined
  if (!raw || !/^\d+$/.test(raw.trim())) return undefined
  return Number(raw.trim()) * 1000
}

/**
 * Runs `work`, converting what it throws with {@link fromE2BError}: every call into the SDK goes through
 * this, so no SDK error crosses the provider's boundary.
 */
export async function withE2BErrors<T>(context: ErrorContext, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw fromE2BError(error, context)
  }
}

type MakeError = (
  code: SandkeepErrorCode,
  message: string,
  retryable?: boolean,
  retryAfterMs?: number,
) => SandkeepError

/** Converts anything the E2B SDK threw into a SandkeepError with the original as `cause`. */
export function fromE2BError(error: unknown, context: ErrorContext): SandkeepError {
  if (SandkeepError.isInstance(error)) return error
  const detail = error instanceof Error ? error.message : String(error)
  const where = context.sandboxId ? ` (sandbox ${context.sandboxId})` : ''
  const make: MakeError = (code, message, retryable = false, retryAfterMs) =>
    new SandkeepError({
      code,
      message,
      cause: error,
      retryable,
      ...(context.sandboxId ? { sandboxId: context.sandboxId } : {}),
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    })
  const facts = { error, context, detail, where, make }
  const converted = byClass(facts) ?? byStatus(facts)
  if (converted) return converted
  const network = networkCode(error)
  if (network) {
    return make(
      'SANDBOX_UNAVAILABLE',
      `Could not reach E2B for ${context.operation}${where} (${network}); check E2B_API_URL / E2B_SANDBOX_URL.`,
      true,
    )
  }
  return make('PROVIDER_ERROR', `E2B ${context.operation} failed${where}: ${detail}`)
}

/** What the converters know about one failure. */
interface Facts {
  error: unknown
  context: ErrorContext
  /** The error's message. */
  detail: string
  /** ` (sandbox <id>)`, or empty. */
  where: string
  make: MakeError
}

/** By the SDK's error class (any copy of it, by name). */
function byClass({ error, context, detail, where, make }: Facts): SandkeepError | undefined {
  const names = nameChain(error)
  const has = (name: string) => names.includes(name)
  if (has('AbortError') || (error instanceof DOMException && error.name === 'AbortError')) {
    return make('ABORTED', `E2B ${context.operation} was aborted${where}.`)
  }
  if (has('SandboxNotFoundError')) {
    return make(
      'SANDBOX_NOT_FOUND',
      `E2B says the sandbox does not exist${where}: it was killed or is past its retention. A new turn recreates it.`,
    )
  }
  if (has('FileNotFoundError')) {
    return make('FILE_NOT_FOUND', `${context.path ?? 'The path'} does not exist in the sandbox${where}.`)
  }
  if (has('AuthenticationError')) {
    return make(
      'PROVIDER_AUTH',
      'E2B refused the credentials: set E2B_API_KEY (or the apiKey option) to a valid key for this API URL.',
    )
  }
  if (has('RateLimitError') && QUOTA_MESSAGE.test(detail)) return undefined
  if (has('RateLimitError')) {
    return make(
      'SANDBOX_UNAVAILABLE',
      `E2B rate-limited ${context.operation}${where}; retry later.`,
      true,
      retryAfterOf(error),
    )
  }
  if (has('ServiceBusyError')) {
    return make(
      'SANDBOX_UNAVAILABLE',
      `E2B is busy (503) for ${context.operation}${where}; retry shortly.`,
      true,
    )
  }
  if (has('TimeoutError')) return make('TIMEOUT', `E2B ${context.operation} timed out${where}: ${detail}`)
  if (has('InvalidArgumentError') || has('TemplateError')) {
    return make('INVALID_ARGUMENT', `E2B refused ${context.operation}${where}: ${detail}`)
  }
  return undefined
}

/** By the HTTP status the error carries or starts its message with. */
function byStatus({ error, context, detail, where, make }: Facts): SandkeepError | undefined {
  const status = statusOf(error)
  const rateLimited = status === 429 || nameChain(error).includes('RateLimitError')
  if (status === 507 || (rateLimited && QUOTA_MESSAGE.test(detail))) {
    // A local-e2b host's full snapshot quota (507; 429 "snapshot limit reached" before): retrying cannot help.
    return make(
      'QUOTA_EXCEEDED',
      `The platform's quota is used up for ${context.operation}${where}: delete snapshots you no longer need (${detail}).`,
    )
  }
  if (status === undefined) return undefined
  if (status === 401 || status === 403) {
    return make('PROVIDER_AUTH', `E2B refused the credentials (${status}) for ${context.operation}.`)
  }

  if (status === 404 && context.snapshotId !== undefined) {
    // E2B answers a create from a snapshot it does not have as from any unknown template: `template '<id>' not found`.
    return make(
      'SNAPSHOT_NOT_FOUND',
      `E2B has no snapshot ${context.snapshotId} (deleted, never made, or another team's): ${detail}`,
    )
  }
  if (status === 404) return make('SANDBOX_NOT_FOUND', `E2B says the sandbox does not exist${where} (404).`)
  if (status === 409) {
    return make(
      'SANDBOX_UNAVAILABLE',
      `The sandbox is still changing state${where} (409): retry shortly.`,
      true,
    )
  }
  if (status === 429) {
    return make(
      'SANDBOX_UNAVAILABLE',
      `E2B rate-limited ${context.operation}${where}.`,
      true,
      retryAfterOf(error),
    )
  }
  if (status >= 500) {
    return make(
      'SANDBOX_UNAVAILABLE',
      `E2B failed ${context.operation}${where} with ${status}: ${detail}`,
      true,
    )
  }
  if (status === 400 || status === 422) {
    return make('INVALID_ARGUMENT', `E2B refused ${context.operation}${where}: ${detail}`)
  }
  return undefined
}
