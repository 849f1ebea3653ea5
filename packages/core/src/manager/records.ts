import { SandkeepError } from '../contract/errors.js'
import type { SessionRecord } from '../contract/session-store.js'
import { type SessionKey, validateSandboxId } from '../contract/validation.js'

/**
 * A record the store returned, checked before it is acted on: one whose fields do not hold what they must
 * (another session's, a count out of range, an invalid sandbox id) is never used.
 * @throws SandkeepError STORE_CORRUPT
 */
export function checkRecord(record: SessionRecord | null, key: SessionKey): SessionRecord | null {
  if (record === null) return null
  const corrupt = (detail: string) =>
    new SandkeepError({
      code: 'STORE_CORRUPT',
      message: `The stored session ${detail}; it was left untouched. Inspect it, or end the session to start over.`,
      tenant: key.tenant,
      conversationId: key.conversationId,
    })
  if (typeof record !== 'object') throw corrupt('is not an object')
  if (record.tenant !== key.tenant || record.conversationId !== key.conversationId) {
    throw corrupt('names another tenant or conversation')
  }
  const count = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
  if (!count(record.turnCount) || !count(record.mappingToken)) throw corrupt('holds a count out of range')
  if (record.sandboxId !== null) {
    try {
      validateSandboxId(record.sandboxId)
    } catch {
      throw corrupt('holds an invalid sandbox id')
    }
  }
  return record
}

/** The error of a turn whose abort signal fired before the sandbox was ready. */
export function abortedError(key: SessionKey, reason?: unknown): SandkeepError {
  return new SandkeepError({
    code: 'ABORTED',
    message: 'The turn was aborted by its abort signal before the sandbox was ready.',
    tenant: key.tenant,
    conversationId: key.conversationId,
    ...(reason === undefined ? {} : { cause: reason }),
  })
}
