// Input checks of the store methods, run before any I/O so every store refuses exactly the same inputs.
import type {
  CheckpointInput,
  Lease,
  ReleaseInput,
  SessionSandboxState,
  SetSandboxInput,
  TurnManifest,
} from '../contract/session-store.js'
import {
  CONTROL_CHARACTERS,
  invalidArgument,
  rejectUnknownOptions,
  type SessionKey,
  validateInteger,
  validateSandboxId,
  validateSessionKey,
} from '../contract/validation.js'
import { checkCheckpointInput } from './checkpoint.js'
import {
  checkTtlMs,
  DEFAULT_LIST_LIMIT,
  MAX_HOLDER_ID_BYTES,
  MAX_LEASE_MS,
  MAX_LIST_LIMIT,
  MAX_PROVIDER_ID_BYTES,
  MAX_TEMPLATE_BYTES,
  utf8Bytes,
} from './limits.js'
import { checkManifest } from './manifest.js'
import { isPlainObject } from './shape.js'

/** The sandbox states a record may hold. */
export const SANDBOX_STATES: readonly SessionSandboxState[] = ['running', 'paused', 'killed', 'unknown']

/** Latest epoch ms a time argument may name (the end of ECMAScript's Date range). */
const MAX_EPOCH_MS = 8.64e15

/**
 * Checks a session key passed to a store method (an object `{ tenant, conversationId }`).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkStoreKey(key: unknown): SessionKey {
  if (!isPlainObject(key)) throw invalidArgument('key', 'must be an object { tenant, conversationId }.')
  if (key.tenant === undefined)
    throw invalidArgument('key.tenant', 'is required by the store (use "default").')
  return validateSessionKey(key.conversationId, key.tenant)
}

/** Checks short printable text: non-empty, at most `maxBytes`, no control characters. */
function checkShortText(name: string, value: unknown, maxBytes: number): string {
  if (typeof value !== 'string' || value.length === 0)
    throw invalidArgument(name, 'must be a non-empty string.')
  if (utf8Bytes(value) > maxBytes || CONTROL_CHARACTERS.test(value)) {
    throw invalidArgument(name, `must be at most ${maxBytes} bytes of printable text.`)
  }
  return value
}

/**
 * Checks a holder id: 1 to 128 bytes of printable text.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkHolderId(holderId: unknown): string {
  if (typeof holderId !== 'string' || holderId.length === 0) {
    throw invalidArgument('holderId', 'must be a non-empty string (one per turn, e.g. a random UUID).')
  }
  return checkShortText('holderId', holderId, MAX_HOLDER_ID_BYTES)
}

/** Checks a lease length in ms. */
export function checkLeaseMs(leaseMs: unknown): number {
  return validateInteger('leaseMs', leaseMs, 1, MAX_LEASE_MS)
}

/**
 * Checks a lease handed back by a caller.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkLease(lease: unknown): Lease {
  if (!isPlainObject(lease)) throw invalidArgument('lease', 'must be the Lease returned by acquire.')
  const holderId = checkHolderId(lease.holderId)
  const fencingToken = validateInteger('lease.fencingToken', lease.fencingToken, 1, Number.MAX_SAFE_INTEGER)
  if (typeof lease.expiresAt !== 'number' || !Number.isFinite(lease.expiresAt)) {
    throw invalidArgument('lease.expiresAt', 'must be a finite number (epoch ms).')
  }
  return { holderId, fencingToken, expiresAt: lease.expiresAt }
}

/** Checks a sandbox state. */
export function checkSandboxState(name: string, state: unknown): SessionSandboxState {
  if (typeof state !== 'string' || !SANDBOX_STATES.includes(state as SessionSandboxState)) {
    throw invalidArgument(name, `must be one of ${SANDBOX_STATES.join(', ')}.`)
  }
  return state as SessionSandboxState
}

/** Checked options of `acquire`. */
export interface CheckedAcquireOptions {
  holderId: string
  leaseMs: number
  ttlMs: number
}

/** Checks the options of `acquire` (`ttlMs` falls back to `defaultTtlMs`). */
export function checkAcquireOptions(options: unknown, defaultTtlMs: number): CheckedAcquireOptions {
  const given = (options ?? {}) as Record<string, unknown>
  return {
    holderId: checkHolderId(given.holderId),
    leaseMs: checkLeaseMs(given.leaseMs),
    ttlMs: checkTtlMs(given.ttlMs, defaultTtlMs),
  }
}

/** Checks the options of `renew` (`ttlMs` falls back to `defaultTtlMs`). */
export function checkRenewOptions(
  options: unknown,
  defaultTtlMs: number,
): { leaseMs: number; ttlMs: number } {
  const given = (options ?? {}) as Record<string, unknown>
  return { leaseMs: checkLeaseMs(given.leaseMs), ttlMs: checkTtlMs(given.ttlMs, defaultTtlMs) }
}

/** Checks the options of `setState`: `at` stays undefined when the store clock is meant. */
export function checkSetStateOptions(
  options: unknown,
  defaultTtlMs: number,
): { at: number | undefined; ttlMs: number } {
  const given = (options ?? {}) as Record<string, unknown>
  return {
    at: given.at === undefined ? undefined : validateInteger('at', given.at, 0, MAX_EPOCH_MS),
    ttlMs: checkTtlMs(given.ttlMs, defaultTtlMs),
  }
}

const SET_SANDBOX_FIELDS = ['sandboxId', 'expectedSandboxId', 'providerId', 'template', 'state', 'ttlMs']

/** Checks and normalises the input of `setSandbox`. */
export function checkSetSandboxInput(input: unknown, defaultTtlMs: number): Required<SetSandboxInput> {
  if (!isPlainObject(input)) throw invalidArgument('setSandbox input', 'must be an object.')
  rejectUnknownOptions('setSandbox input', input, SET_SANDBOX_FIELDS)
  const sandboxId = validateSandboxId(input.sandboxId)
  if (input.expectedSandboxId === undefined) {
    throw invalidArgument(
      'expectedSandboxId',
      'is required: null for a first creation, else the id mapped now.',
    )
  }
  const expectedSandboxId =
    input.expectedSandboxId === null ? null : validateSandboxId(input.expectedSandboxId)
  const template =
    input.template === undefined || input.template === null
      ? null
      : checkShortText('template', input.template, MAX_TEMPLATE_BYTES)
  return {
    sandboxId,
    expectedSandboxId,
    providerId: checkShortText('providerId', input.providerId, MAX_PROVIDER_ID_BYTES),
    template,
    state: input.state === undefined ? 'running' : checkSandboxState('state', input.state),
    ttlMs: checkTtlMs(input.ttlMs, defaultTtlMs),
  }
}

/** Normalised {@link ReleaseInput}: `manifest` stays `undefined` when the caller keeps the stored one. */
export interface CheckedReleaseInput {
  manifest: TurnManifest | null | undefined
  manifestIfTurnCount: number | undefined
  turnEndedAt: number
  runningSeconds: number
  runningFrom: number | undefined
  pausedSeconds: number
  stateIfLast: SessionSandboxState | undefined
  usedSandbox: boolean | undefined
  holdIfLast: boolean
  checkpoint: CheckpointInput | undefined
  ttlMs: number
}

function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalidArgument(name, 'must be true or false.')
  return value
}

function checkSeconds(name: string, value: unknown): number {
  if (value === undefined) return 0
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1e12) {
    throw invalidArgument(name, 'must be a finite number of seconds >= 0.')
  }
  return value
}

const RELEASE_FIELDS: ReadonlyArray<keyof ReleaseInput> = [
  'manifest',
  'manifestIfTurnCount',
  'turnEndedAt',
  'runningSeconds',
  'runningFrom',
  'pausedSeconds',
  'stateIfLast',
  'usedSandbox',
  'holdIfLast',
  'checkpoint',
  'ttlMs',
]

/** Checks the input of `release`. */
export function checkReleaseInput(input: unknown, defaultTtlMs: number): CheckedReleaseInput {
  if (!isPlainObject(input)) throw invalidArgument('release input', 'must be an object.')
  rejectUnknownOptions('release input', input, RELEASE_FIELDS)
  const optional = <T>(value: unknown, check: (value: unknown) => T): T | undefined =>
    value === undefined ? undefined : check(value)
  return {
    manifest: optional(input.manifest, (manifest) => (manifest === null ? null : checkManifest(manifest))),
    manifestIfTurnCount: optional(input.manifestIfTurnCount, (count) =>
      validateInteger('manifestIfTurnCount', count, 0, Number.MAX_SAFE_INTEGER),
    ),
    turnEndedAt: validateInteger('turnEndedAt', input.turnEndedAt, 0, MAX_EPOCH_MS),
    runningSeconds: checkSeconds('runningSeconds', input.runningSeconds),
    runningFrom: optional(input.runningFrom, (from) => validateInteger('runningFrom', from, 0, MAX_EPOCH_MS)),
    pausedSeconds: checkSeconds('pausedSeconds', input.pausedSeconds),
    stateIfLast: optional(input.stateIfLast, (state) => checkSandboxState('stateIfLast', state)),
    usedSandbox: optional(input.usedSandbox, (used) => checkBoolean('usedSandbox', used)),
    holdIfLast: optional(input.holdIfLast, (hold) => checkBoolean('holdIfLast', hold)) ?? false,
    checkpoint: optional(input.checkpoint, checkCheckpointInput),
    ttlMs: checkTtlMs(input.ttlMs, defaultTtlMs),
  }
}

/** Checks `list` options. */
export function checkListOptions(options: unknown): { limit: number; cursor: string | undefined } {
  if (options === undefined) return { limit: DEFAULT_LIST_LIMIT, cursor: undefined }
  if (!isPlainObject(options)) throw invalidArgument('list options', 'must be an object.')
  rejectUnknownOptions('list options', options, ['limit', 'cursor'])
  const limit =
    options.limit === undefined
      ? DEFAULT_LIST_LIMIT
      : validateInteger('limit', options.limit, 1, MAX_LIST_LIMIT)
  if (options.cursor !== undefined && (typeof options.cursor !== 'string' || options.cursor.length === 0)) {
    throw invalidArgument('cursor', 'must be the string returned by a previous list call.')
  }
  return { limit, cursor: options.cursor as string | undefined }
}
