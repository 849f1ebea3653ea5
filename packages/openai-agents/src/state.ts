// What RunState keeps of a sandkeep session: the conversation's key, never a sandbox id, token or API key.
import { SandkeepError, validateConversationId, validateTenant } from '@sandkeep/core'

/** The key of the conversation a session state belongs to. */
export interface SessionKey {
  conversationId: string
  tenant: string
}

/**
 * Reads and validates the key in a (deserialized, or about to be resumed) session state.
 * @throws SandkeepError INVALID_ARGUMENT when it is missing or malformed
 */
export function readSessionKey(state: unknown): SessionKey {
  if (state === null || typeof state !== 'object') throw badState('it is not an object')
  const record = state as Record<string, unknown>
  try {
    return {
      conversationId: validateConversationId(record.conversationId),
      tenant: validateTenant(record.tenant),
    }
  } catch (error) {
    throw badState(error instanceof Error ? error.message : String(error), error)
  }
}

/** The provider state RunState stores: the conversation's key only. */
export function serializeSessionKey(state: SessionKey): Record<string, unknown> {
  const key = readSessionKey(state)
  return { conversationId: key.conversationId, tenant: key.tenant }
}

function badState(reason: string, cause?: unknown): SandkeepError {
  return new SandkeepError({
    code: 'INVALID_ARGUMENT',
    message: `This is not a sandkeep sandbox session state (${reason}). Resume from the RunState string the run wrote, unchanged, with the same sandkeep client.`,
    cause,
  })
}
