// The errors every store throws with one wording: a lost lease, a full journal, a corrupt record, a closed
// store. Argument errors come from ../validation.ts (`invalidArgument`, `rejectUnknownOptions`).
import { SandkeepError } from '../contract/errors.js'
import type { SessionKey } from '../contract/validation.js'

/**
 * LEASE_LOST for `key`: the lease lapsed, was fenced off by a newer one, or another holder changed the
 * mapping first. `why` is said in the message.
 */
export function leaseLost(key: SessionKey, why: string): SandkeepError {
  return new SandkeepError({
    code: 'LEASE_LOST',
    message: `The lease on this session is no longer valid (${why}); end the turn and begin a new one.`,
    tenant: key.tenant,
    conversationId: key.conversationId,
  })
}

/**
 * SESSION_BUSY for `key`: another turn's end holds the session while it pauses the sandbox; retry after
 * `retryAfterMs` at the latest (the hold's remaining lease), usually much sooner.
 */
export function sessionHeld(key: SessionKey, retryAfterMs: number): SandkeepError {
  return new SandkeepError({
    code: 'SESSION_BUSY',
    message: `The previous turn of this conversation is still pausing its sandbox; begin the turn again shortly (the hold lapses within ${Math.ceil(retryAfterMs)} ms).`,
    tenant: key.tenant,
    conversationId: key.conversationId,
    retryable: true,
    retryAfterMs,
  })
}

/** What a journal holds now, and what it may hold. */
export interface JournalUsage {
  /** Steps stored. */
  steps: number
  /** UTF-8 bytes of the stored entries. */
  bytes: number
}

/** A store's journal limits, as given by {@link checkStoreLimits}. */
export interface JournalLimits {
  maxJournalSteps: number
  maxJournalBytes: number
}

/** JOURNAL_FULL for `key`: the step was not recorded. */
export function journalFull(key: SessionKey, used: JournalUsage, limits: JournalLimits): SandkeepError {
  return new SandkeepError({
    code: 'JOURNAL_FULL',
    message: `The journal of this session is full (${used.steps} steps, ${used.bytes} bytes; limits ${limits.maxJournalSteps} steps, ${limits.maxJournalBytes} bytes). The step was not recorded; clear the journal or raise the limits.`,
    tenant: key.tenant,
    conversationId: key.conversationId,
  })
}

/**
 * Builds the STORE_CORRUPT error for a stored value at `where` (a key name, or any place the store can
 * name): the value was left untouched.
 */
export function corruptRecordError(
  where: string,
  why: string,
  key?: SessionKey,
  cause?: unknown,
): SandkeepError {
  return new SandkeepError({
    code: 'STORE_CORRUPT',
    message: `The session record at ${where} cannot be read (${why}). It was left untouched; inspect it, then delete the session to start over.`,
    cause,
    tenant: key?.tenant,
    conversationId: key?.conversationId,
  })
}

/** STORE_UNAVAILABLE for a call on a closed store; `name` says which ("memory", "Redis"). */
export function storeClosed(name: string): SandkeepError {
  return new SandkeepError({
    code: 'STORE_UNAVAILABLE',
    message: `This ${name} session store was closed; create a new one.`,
  })
}
