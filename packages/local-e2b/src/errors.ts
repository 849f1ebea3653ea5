// The host's own failure type for bad options, bad fault requests and a machine that cannot isolate.
// local-e2b is a platform that E2B clients talk to over HTTP; it must not depend on any client library's
// error model, so it names its own codes and maps them to HTTP statuses itself.

/** What went wrong, as a stable string a caller can branch on. */
export const LocalE2BErrorCode = {
  /** An option, fault rule or admin request that can never work; fix the input. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** The sandbox (or snapshot) named is not on this host. */
  NOT_FOUND: 'NOT_FOUND',
  /** This machine cannot do what was asked (no bubblewrap, no root, no cgroup). */
  UNSUPPORTED: 'UNSUPPORTED',
} as const

export type LocalE2BErrorCode = (typeof LocalE2BErrorCode)[keyof typeof LocalE2BErrorCode]

const MARKER = Symbol.for('sandkeep.local-e2b.error')

/** A local-e2b failure with a code; `isInstance` works across duplicated copies of the package. */
export class LocalE2BError extends Error {
  override name = 'LocalE2BError'
  readonly code: LocalE2BErrorCode
  readonly sandboxId: string | undefined
  readonly [MARKER] = true

  constructor(options: { code: LocalE2BErrorCode; message: string; sandboxId?: string; cause?: unknown }) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = options.code
    this.sandboxId = options.sandboxId
  }

  static isInstance(value: unknown): value is LocalE2BError {
    return typeof value === 'object' && value !== null && (value as { [MARKER]?: unknown })[MARKER] === true
  }

  /** The HTTP status this failure is answered with by the host's routes. */
  get status(): number {
    if (this.code === LocalE2BErrorCode.NOT_FOUND) return 404
    if (this.code === LocalE2BErrorCode.UNSUPPORTED) return 501
    return 400
  }
}

/** An option or input that can never work. */
export function invalidArgument(message: string): LocalE2BError {
  return new LocalE2BError({ code: LocalE2BErrorCode.INVALID_ARGUMENT, message })
}

/** Quotes one word for a POSIX shell (single quotes; an inner quote becomes '\''). */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}
