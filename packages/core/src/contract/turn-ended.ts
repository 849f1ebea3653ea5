import { SandkeepError } from './errors.js'

/** Whose turn ended, for the error's structured fields. */
export interface TurnEndedScope {
  tenant?: string | undefined
  conversationId?: string | undefined
  sandboxId?: string | undefined
}

/**
 * The one TURN_ENDED error: a call made on a turn (or on a session or view over one) after its end. Every
 * layer that ends a turn (the manager's turn, an adapter's session, the call an adapter wraps) builds it here,
 * so the message is the same wherever it is thrown; `next` says what to do instead, in the caller's terms.
 */
export function turnEndedError(
  scope: TurnEndedScope = {},
  next = 'begin a new turn to use the sandbox again',
): SandkeepError {
  return new SandkeepError({
    code: 'TURN_ENDED',
    message: `This turn has ended: its sandbox may not be used any more; ${next}.`,
    ...(scope.tenant === undefined ? {} : { tenant: scope.tenant }),
    ...(scope.conversationId === undefined ? {} : { conversationId: scope.conversationId }),
    ...(scope.sandboxId === undefined ? {} : { sandboxId: scope.sandboxId }),
  })
}
