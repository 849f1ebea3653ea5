/** One line for an error: its code when it is a SandkeepError (or carries a code), then its message. */
export function describeError(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const { code, message } = error as { code?: unknown; message?: unknown }
    const text = typeof message === 'string' ? message : String(error)
    return typeof code === 'string' && /^[A-Z_]+$/.test(code) ? `${code}: ${text}` : text
  }
  return String(error)
}

/**
 * Configuration that cannot work, found before any side effect (an unreachable store): the CLI prints its
 * message on one line and exits 2, like bad flags, but without pointing at --help.
 */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
