// The metadata sandkeep writes on every sandbox it creates, and the conversation hash it carries. Below both
// the session manager (which writes and searches by it) and the telemetry (which names a conversation by the
// same hash), so neither reaches into the other.
import { createHash } from 'node:crypto'
import type { SessionKey } from './validation.js'

/** Metadata keys sandkeep writes on every sandbox it creates. */
export const SANDKEEP_METADATA = {
  /** The tenant that owns the sandbox; a sandbox naming another tenant is never used. */
  tenant: 'sandkeep.tenant',
  /** A hash of the conversation id (the id itself may be personal data; it never leaves the store). */
  session: 'sandkeep.session',
  /** The sandkeep version that created the sandbox. */
  version: 'sandkeep.version',
} as const

/**
 * Hash of a conversation id as written to `sandkeep.session` metadata: sha256, hex, first 32 characters.
 * (The store keys use their own, shorter hash; this one is what `gc` and store-loss adoption search by.)
 */
export function hashConversationId(conversationId: string): string {
  return createHash('sha256').update(conversationId).digest('hex').slice(0, 32)
}

/** The metadata that names a session's sandbox: its tenant and the hash of its conversation id. */
export function sessionMetadata(key: SessionKey): Record<string, string> {
  return {
    [SANDKEEP_METADATA.tenant]: key.tenant,
    [SANDKEEP_METADATA.session]: hashConversationId(key.conversationId),
  }
}
