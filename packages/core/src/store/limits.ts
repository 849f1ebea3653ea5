// The stores' limits and defaults, and the check of the options every store factory shares.

import type { SessionKey } from '../contract/validation.js'
import { invalidArgument, rejectUnknownOptions, validateInteger } from '../contract/validation.js'
import { type JournalLimits, type JournalUsage, journalFull } from './errors.js'

/** Default session TTL of the stores: 30 days, meant to match a platform's retention of paused sandboxes. */
export const DEFAULT_SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000
/** Longest session TTL a store accepts: 10 years. */
export const MAX_SESSION_TTL_MS = 3650 * 24 * 60 * 60 * 1000
/** Longest lease a store grants: 24 hours (renew for longer turns). */
export const MAX_LEASE_MS = 24 * 60 * 60 * 1000
/** Default cap on journal steps per session. */
export const DEFAULT_MAX_JOURNAL_STEPS = 1000
/** Default cap on journal bytes per session (UTF-8 bytes of the stored entries). */
export const DEFAULT_MAX_JOURNAL_BYTES = 1024 * 1024
/** Largest journal step accepted, in UTF-8 bytes of its JSON form. */
export const MAX_JOURNAL_STEP_BYTES = 256 * 1024
/** Largest manifest a store accepts, in UTF-8 bytes of its JSON. */
export const MAX_MANIFEST_BYTES = 256 * 1024
/** Most file witnesses a manifest's marker keeps (`TurnManifest['filesystem'].witnesses`). */
export const MAX_MANIFEST_WITNESSES = 8
/** Largest holder id, in UTF-8 bytes. */
export const MAX_HOLDER_ID_BYTES = 128
/** Largest provider id, in UTF-8 bytes. */
export const MAX_PROVIDER_ID_BYTES = 128
/** Largest template name, in UTF-8 bytes. */
export const MAX_TEMPLATE_BYTES = 256
/** Default and largest page size of `SessionStore.list`. */
export const DEFAULT_LIST_LIMIT = 50
export const MAX_LIST_LIMIT = 1000

const encoder = new TextEncoder()

/** UTF-8 length of a string. */
export function utf8Bytes(text: string): number {
  return encoder.encode(text).byteLength
}

/** Checks a TTL in ms; `undefined` gives `fallback`. */
export function checkTtlMs(ttlMs: unknown, fallback: number): number {
  if (ttlMs === undefined) return fallback
  return validateInteger('ttlMs', ttlMs, 1, MAX_SESSION_TTL_MS)
}

/** The options every store factory takes, checked: {@link checkStoreLimits}. */
export interface StoreLimits extends JournalLimits {
  /** Session TTL used when a call names none, ms. */
  defaultTtlMs: number
}

/**
 * Checks a store factory's `options`: an object whose keys are all in `known` (else INVALID_ARGUMENT naming
 * `factory`), with the shared `ttlMs`, `maxJournalSteps` and `maxJournalBytes` (defaults filled in).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkStoreLimits(factory: string, options: unknown, known: readonly string[]): StoreLimits {
  if (typeof options !== 'object' || options === null) throw invalidArgument('options', 'must be an object.')
  rejectUnknownOptions(`${factory} options`, options, known)
  const { ttlMs, maxJournalSteps, maxJournalBytes } = options as Record<string, unknown>
  return {
    defaultTtlMs: checkTtlMs(ttlMs, DEFAULT_SESSION_TTL_MS),
    maxJournalSteps:
      maxJournalSteps === undefined
        ? DEFAULT_MAX_JOURNAL_STEPS
        : validateInteger('maxJournalSteps', maxJournalSteps, 1, 1_000_000),
    maxJournalBytes:
      maxJournalBytes === undefined
        ? DEFAULT_MAX_JOURNAL_BYTES
        : validateInteger('maxJournalBytes', maxJournalBytes, 1, 512 * 1024 * 1024),
  }
}

/**
 * Refuses one more journal entry of `bytes` on a journal holding `used`, past the limits.
 * @throws SandkeepError JOURNAL_FULL
 */
export function checkJournalRoom(
  key: SessionKey,
  used: JournalUsage,
  bytes: number,
  limits: JournalLimits,
): void {
  if (used.steps + 1 > limits.maxJournalSteps || used.bytes + bytes > limits.maxJournalBytes) {
    throw journalFull(key, used, limits)
  }
}
