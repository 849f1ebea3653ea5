import { createHash } from 'node:crypto'
import type { CreateSandboxOptions } from '../sandbox-provider.js'
import type { SessionKey } from '../validation.js'
import { SANDKEEP_VERSION } from '../version.js'
import type { ResolvedOptions } from './options.js'

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

/** What `provider.create` gets for a session: the configured sandbox plus sandkeep's metadata. */
export function sandboxCreateOptions(
  config: ResolvedOptions,
  key: SessionKey,
  signal: AbortSignal,
): CreateSandboxOptions {
  const { sandbox } = config
  return {
    ...(sandbox.template ? { template: sandbox.template } : {}),
    timeoutMs: sandbox.timeoutMs,
    metadata: {
      ...sandbox.metadata,
      ...sessionMetadata(key),
      [SANDKEEP_METADATA.version]: SANDKEEP_VERSION,
    },
    ...(sandbox.envs ? { envs: sandbox.envs } : {}),
    allowInternetAccess: sandbox.allowInternetAccess,
    ...(config.onTurnEnd === 'auto-pause' ? { lifecycle: { onTimeout: 'pause', autoResume: true } } : {}),
    signal,
  }
}
