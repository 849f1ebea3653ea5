import { SandkeepError } from '@sandkeep/core'

/** A caller's mistake (bad option, state, path), thrown before any I/O. */
export function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

/** Something the Agents SDK asks for that this client does not do (a PTY, another user, a mount). */
export function unsupported(message: string): SandkeepError {
  return new SandkeepError({ code: 'CAPABILITY_UNSUPPORTED', message })
}
