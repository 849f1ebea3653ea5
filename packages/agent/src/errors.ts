import { SandkeepError } from '@sandkeep/core'

/** A caller's mistake (bad option, path, command), thrown before any I/O. */
export function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

/** A sandbox call that failed in a way the contract has no code for. */
export function providerError(message: string): SandkeepError {
  return new SandkeepError({ code: 'PROVIDER_ERROR', message })
}
