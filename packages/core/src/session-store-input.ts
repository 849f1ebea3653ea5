// Input checks and record parsing shared by every SessionStore implementation, so the memory store and the
// Redis store refuse exactly the same inputs before any I/O and read records the same way.
import { createHash } from 'node:crypto'
import { SandkeepError } from './errors.js'
import type { JournalEntry, JournalStep } from './journal.js'
import { journalFilePathProblem } from './rehydrate.js'
import {
  type Lease,
  type ReleaseInput,
  SESSION_RECORD_SCHEMA_VERSION,
  type SessionRecord,
  type SessionSandboxState,
  type SetSandboxInput,
  type TurnManifest,
} from './session-store.js'
import { type SessionKey, validateInteger, validateSandboxId, validateSessionKey } from './validation.js'

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
/** Largest manifest a store accepts, in UTF-8 bytes of its JSON. */
export const MAX_MANIFEST_BYTES = 256 * 1024
/** Largest holder id, in UTF-8 bytes. */
export const MAX_HOLDER_ID_BYTES = 128
/** Default and largest page size of `SessionStore.list`. */
export const DEFAULT_LIST_LIMIT = 50
export const MAX_LIST_LIMIT = 1000

const SANDBOX_STATES: readonly SessionSandboxState[] = ['running', 'paused', 'killed', 'unknown']
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
const encoder = new TextEncoder()

/** UTF-8 length of a string. */
export function utf8Bytes(text: string): number {
  return encoder.encode(text).byteLength
}

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function rejectUnknownKeys(what: string, value: Record<string, unknown>, allowed: readonly string[]): void {
  for (const name of Object.keys(value)) {
    if (!allowed.includes(name)) {
      throw invalid(`${what} has an unknown field "${name.slice(0, 40)}"; allowed: ${allowed.join(', ')}.`)
    }
  }
}

/**
 * Checks a session key passed to a store method (an object `{ tenant, conversationId }`).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkStoreKey(key: unknown): SessionKey {
  if (!isPlainObject(key)) throw invalid('key must be an object { tenant, conversationId }.')
  if (key.tenant === undefined) throw invalid('key.tenant is required by the store (use "default").')
  return validateSessionKey(key.conversationId, key.tenant)
}

/**
 * Checks a holder id: 1 to 128 bytes of printable text.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkHolderId(holderId: unknown): string {
  if (typeof holderId !== 'string' || holderId.length === 0) {
    throw invalid('holderId must be a non-empty string (one per turn, e.g. a random UUID).')
  }
  if (utf8Bytes(holderId) > MAX_HOLDER_ID_BYTES || CONTROL_CHARACTERS.test(holderId)) {
    throw invalid(`holderId must be at most ${MAX_HOLDER_ID_BYTES} bytes of printable text.`)
  }
  return holderId
}

/** Checks a lease length in ms. */
export function checkLeaseMs(leaseMs: unknown): number {
  return validateInteger('leaseMs', leaseMs, 1, MAX_LEASE_MS)
}

/** Checks a TTL in ms; `undefined` gives `fallback`. */
export function checkTtlMs(ttlMs: unknown, fallback: number): number {
  if (ttlMs === undefined) return fallback
  return validateInteger('ttlMs', ttlMs, 1, MAX_SESSION_TTL_MS)
}

/**
 * Checks a lease handed back by a caller.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkLease(lease: unknown): Lease {
  if (!isPlainObject(lease)) throw invalid('lease must be the Lease returned by acquire.')
  const holderId = checkHolderId(lease.holderId)
  const fencingToken = validateInteger('lease.fencingToken', lease.fencingToken, 1, Number.MAX_SAFE_INTEGER)
  if (typeof lease.expiresAt !== 'number' || !Number.isFinite(lease.expiresAt)) {
    throw invalid('lease.expiresAt must be a finite number (epoch ms).')
  }
  return { holderId, fencingToken, expiresAt: lease.expiresAt }
}

/** Checks a sandbox state. */
export function checkSandboxState(name: string, state: unknown): SessionSandboxState {
  if (typeof state !== 'string' || !SANDBOX_STATES.includes(state as SessionSandboxState)) {
    throw invalid(`${name} must be one of ${SANDBOX_STATES.join(', ')}.`)
  }
  return state as SessionSandboxState
}

function checkShortText(name: string, value: unknown, maxBytes = 256): string {
  if (typeof value !== 'string' || value.length === 0) throw invalid(`${name} must be a non-empty string.`)
  if (utf8Bytes(value) > maxBytes || CONTROL_CHARACTERS.test(value)) {
    throw invalid(`${name} must be at most ${maxBytes} bytes of printable text.`)
  }
  return value
}

/** Checks and normalises the input of `setSandbox`. */
export function checkSetSandboxInput(input: unknown, defaultTtlMs: number): Required<SetSandboxInput> {
  if (!isPlainObject(input)) throw invalid('setSandbox input must be an object.')
  rejectUnknownKeys('setSandbox input', input, [
    'sandboxId',
    'expectedSandboxId',
    'providerId',
    'template',
    'state',
    'ttlMs',
  ])
  const sandboxId = validateSandboxId(input.sandboxId)
  if (input.expectedSandboxId === undefined) {
    throw invalid('expectedSandboxId is required: null for a first creation, else the id mapped now.')
  }
  const expectedSandboxId =
    input.expectedSandboxId === null ? null : validateSandboxId(input.expectedSandboxId)
  const providerId = checkShortText('providerId', input.providerId, 128)
  const template =
    input.template === undefined || input.template === null
      ? null
      : checkShortText('template', input.template)
  const state = input.state === undefined ? 'running' : checkSandboxState('state', input.state)
  return {
    sandboxId,
    expectedSandboxId,
    providerId,
    template,
    state,
    ttlMs: checkTtlMs(input.ttlMs, defaultTtlMs),
  }
}

/** Checks a manifest deeply and returns a copy holding only the contract's fields. */
export function checkManifest(manifest: unknown): TurnManifest {
  if (!isPlainObject(manifest)) throw invalid('manifest must be an object or null.')
  if (typeof manifest.writtenAt !== 'number' || !Number.isFinite(manifest.writtenAt)) {
    throw invalid('manifest.writtenAt must be a finite number (epoch ms).')
  }
  const sandboxId = validateSandboxId(manifest.sandboxId)
  const text = (name: string, value: unknown): string => {
    if (typeof value !== 'string') throw invalid(`manifest ${name} must be a string.`)
    return value
  }
  let memory: TurnManifest['memory'] = null
  if (manifest.memory !== null && manifest.memory !== undefined) {
    if (!Array.isArray(manifest.memory)) throw invalid('manifest.memory must be an array or null.')
    memory = manifest.memory.map((entry: unknown) => {
      if (!isPlainObject(entry)) throw invalid('manifest.memory entries must be objects.')
      if (entry.contextId !== null && typeof entry.contextId !== 'string') {
        throw invalid('manifest.memory[].contextId must be a string or null.')
      }
      return {
        language: text('memory[].language', entry.language),
        contextId: entry.contextId as string | null,
        variable: text('memory[].variable', entry.variable),
        value: text('memory[].value', entry.value),
      }
    })
  }
  let filesystem: TurnManifest['filesystem'] = null
  if (manifest.filesystem !== null && manifest.filesystem !== undefined) {
    if (!isPlainObject(manifest.filesystem)) throw invalid('manifest.filesystem must be an object or null.')
    filesystem = {
      path: text('filesystem.path', manifest.filesystem.path),
      value: text('filesystem.value', manifest.filesystem.value),
    }
  }
  let processes: TurnManifest['processes'] = null
  if (manifest.processes !== null && manifest.processes !== undefined) {
    if (!Array.isArray(manifest.processes)) throw invalid('manifest.processes must be an array or null.')
    processes = manifest.processes.map((entry: unknown) => {
      if (!isPlainObject(entry)) throw invalid('manifest.processes entries must be objects.')
      const pid = validateInteger('manifest.processes[].pid', entry.pid, 0, 2 ** 31)
      const process: { pid: number; command: string; cwd?: string } = {
        pid,
        command: text('processes[].command', entry.command),
      }
      if (entry.cwd !== undefined) process.cwd = text('processes[].cwd', entry.cwd)
      return process
    })
  }
  const copy: TurnManifest = { writtenAt: manifest.writtenAt, sandboxId, memory, filesystem, processes }
  const bytes = utf8Bytes(JSON.stringify(copy))
  if (bytes > MAX_MANIFEST_BYTES) {
    throw invalid(`manifest is ${bytes} bytes of JSON; the limit is ${MAX_MANIFEST_BYTES}.`)
  }
  return copy
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
  ttlMs: number
}

function checkSeconds(name: string, value: unknown): number {
  if (value === undefined) return 0
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1e12) {
    throw invalid(`${name} must be a finite number of seconds >= 0.`)
  }
  return value
}

/** Checks the input of `release`. */
export function checkReleaseInput(input: unknown, defaultTtlMs: number): CheckedReleaseInput {
  if (!isPlainObject(input)) throw invalid('release input must be an object.')
  rejectUnknownKeys('release input', input, [
    'manifest',
    'manifestIfTurnCount',
    'turnEndedAt',
    'runningSeconds',
    'runningFrom',
    'pausedSeconds',
    'stateIfLast',
    'ttlMs',
  ])
  return {
    manifest:
      input.manifest === undefined
        ? undefined
        : input.manifest === null
          ? null
          : checkManifest(input.manifest),
    manifestIfTurnCount:
      input.manifestIfTurnCount === undefined
        ? undefined
        : validateInteger('manifestIfTurnCount', input.manifestIfTurnCount, 0, Number.MAX_SAFE_INTEGER),
    turnEndedAt: validateInteger('turnEndedAt', input.turnEndedAt, 0, 8.64e15),
    runningSeconds: checkSeconds('runningSeconds', input.runningSeconds),
    runningFrom:
      input.runningFrom === undefined
        ? undefined
        : validateInteger('runningFrom', input.runningFrom, 0, 8.64e15),
    pausedSeconds: checkSeconds('pausedSeconds', input.pausedSeconds),
    stateIfLast:
      input.stateIfLast === undefined ? undefined : checkSandboxState('stateIfLast', input.stateIfLast),
    ttlMs: checkTtlMs(input.ttlMs, defaultTtlMs),
  }
}

/**
 * Checks a journal step and returns a copy holding only the contract's fields. `stored`: the step was read
 * back from the store, where one recorded before the path rule existed must still parse.
 */
export function checkJournalStep(step: unknown, stored = false): JournalStep {
  if (!isPlainObject(step)) throw invalid('journal step must be an object with a "kind".')
  const text = (name: string, value: unknown, allowEmpty = false): string => {
    if (typeof value !== 'string' || (!allowEmpty && value.length === 0)) {
      throw invalid(`journal step ${name} must be a${allowEmpty ? '' : ' non-empty'} string.`)
    }
    if (value.isWellFormed && !value.isWellFormed()) {
      throw invalid(`journal step ${name} contains a lone UTF-16 surrogate.`)
    }
    return value
  }
  switch (step.kind) {
    case 'command': {
      rejectUnknownKeys('command step', step, ['kind', 'command', 'cwd'])
      const copy: JournalStep = { kind: 'command', command: text('command', step.command) }
      if (step.cwd !== undefined) copy.cwd = text('cwd', step.cwd)
      return copy
    }
    case 'code': {
      rejectUnknownKeys('code step', step, ['kind', 'code', 'language'])
      const copy: JournalStep = { kind: 'code', code: text('code', step.code) }
      if (step.language !== undefined) {
        if (step.language !== 'python' && step.language !== 'javascript') {
          throw invalid('code step language must be "python" or "javascript".')
        }
        copy.language = step.language
      }
      return copy
    }
    case 'file': {
      rejectUnknownKeys('file step', step, ['kind', 'path', 'content'])
      const path = text('path', step.path)
      const problem = stored ? undefined : journalFilePathProblem(path)
      if (problem) throw invalid(`journal file step path ${JSON.stringify(path)} ${problem}.`)
      return { kind: 'file', path, content: text('content', step.content, true) }
    }
    default:
      throw invalid('journal step kind must be "command", "code" or "file".')
  }
}

/** The stored form of a journal entry; both stores count journal bytes on exactly this text. */
export function serializeJournalEntry(recordedAt: number, step: JournalStep): string {
  return `{"recordedAt":${recordedAt},"step":${JSON.stringify(step)}}`
}

/** Checks `list` options. */
export function checkListOptions(options: unknown): { limit: number; cursor: string | undefined } {
  if (options === undefined) return { limit: DEFAULT_LIST_LIMIT, cursor: undefined }
  if (!isPlainObject(options)) throw invalid('list options must be an object.')
  rejectUnknownKeys('list options', options, ['limit', 'cursor'])
  const limit =
    options.limit === undefined
      ? DEFAULT_LIST_LIMIT
      : validateInteger('limit', options.limit, 1, MAX_LIST_LIMIT)
  if (options.cursor !== undefined && (typeof options.cursor !== 'string' || options.cursor.length === 0)) {
    throw invalid('cursor must be the string returned by a previous list call.')
  }
  return { limit, cursor: options.cursor as string | undefined }
}

/** A list position: sessions strictly after (`score`, `member`) in descending order. */
export interface ListPosition {
  /** Activity score of the last session returned. */
  score: number
  /** Its index member (a conversation hash). */
  member: string
}

/** Encodes a list position as an opaque cursor. */
export function encodeListCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify([position.score, position.member]), 'utf8').toString('base64url')
}

/**
 * Decodes a cursor from {@link encodeListCursor}.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function decodeListCursor(cursor: string): ListPosition {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'number' &&
      Number.isFinite(value[0]) &&
      typeof value[1] === 'string'
    ) {
      return { score: value[0], member: value[1] }
    }
  } catch {
    // fall through to the error below
  }
  throw invalid('cursor is not one this store returned; start again without a cursor.')
}

/** True when (`score`, `member`) comes after `position` in the listing order (score desc, member desc). */
export function isAfterListPosition(score: number, member: string, position: ListPosition): boolean {
  return score < position.score || (score === position.score && member < position.member)
}

function corrupt(where: string, why: string, key: SessionKey | undefined, cause?: unknown): SandkeepError {
  return new SandkeepError({
    code: 'STORE_CORRUPT',
    message: `The session record at ${where} cannot be read (${why}). It was left untouched; inspect it, then delete the session to start over.`,
    cause,
    tenant: key?.tenant,
    conversationId: key?.conversationId,
  })
}

/** Builds the STORE_CORRUPT error for a stored value at `where` (a key name). */
export function corruptRecordError(
  where: string,
  why: string,
  key?: SessionKey,
  cause?: unknown,
): SandkeepError {
  return corrupt(where, why, key, cause)
}

const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value)

const NUMBER_TEXT = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/

/**
 * Parses a stored record kept as one text field per scalar (a missing field is null) plus `manifest` (the
 * manifest's JSON) and `schemaVersion`. `expected` is the key the record must belong to (a mismatch means
 * a hash collision or tampering); `conversationId` may be left out when only the hash is known.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function parseRecordFields(
  fields: Readonly<Record<string, string | undefined>>,
  where: string,
  expected: { tenant: string; conversationId?: string },
): SessionRecord {
  if (fields.schemaVersion !== String(SESSION_RECORD_SCHEMA_VERSION)) {
    throw corrupt(where, `unknown schemaVersion ${JSON.stringify(fields.schemaVersion ?? null)}`, undefined)
  }
  const number = (name: string): number => {
    const text = fields[name]
    // `1e400` matches the pattern but is Infinity: a count or time no clock or counter can reach.
    const value = text === undefined || !NUMBER_TEXT.test(text) ? Number.NaN : Number(text)
    if (!Number.isFinite(value)) throw corrupt(where, `field ${name} is not a finite number`, undefined)
    return value
  }
  const nullableNumber = (name: string): number | null => (fields[name] === undefined ? null : number(name))
  const nullableText = (name: string): string | null => fields[name] ?? null
  const state = fields.state
  if (
    typeof fields.tenant !== 'string' ||
    typeof fields.conversationId !== 'string' ||
    !SANDBOX_STATES.includes(state as SessionSandboxState)
  ) {
    throw corrupt(where, 'a field is missing or has the wrong value', undefined)
  }
  if (
    fields.tenant !== expected.tenant ||
    (expected.conversationId !== undefined && fields.conversationId !== expected.conversationId)
  ) {
    throw corrupt(where, 'it names another tenant or conversation', undefined)
  }
  let manifest: TurnManifest | null = null
  if (fields.manifest !== undefined) {
    try {
      manifest = checkManifest(JSON.parse(fields.manifest))
    } catch (error) {
      throw corrupt(where, 'the manifest does not parse', undefined, error)
    }
  }
  const record: SessionRecord = {
    schemaVersion: SESSION_RECORD_SCHEMA_VERSION,
    tenant: fields.tenant,
    conversationId: fields.conversationId,
    sandboxId: nullableText('sandboxId'),
    providerId: nullableText('providerId'),
    template: nullableText('template'),
    createdAt: number('createdAt'),
    updatedAt: number('updatedAt'),
    lastTurnStartedAt: nullableNumber('lastTurnStartedAt'),
    lastTurnEndedAt: nullableNumber('lastTurnEndedAt'),
    turnCount: number('turnCount'),
    runningSeconds: number('runningSeconds'),
    pausedSeconds: number('pausedSeconds'),
    state: state as SessionSandboxState,
    pausedAt: nullableNumber('pausedAt'),
    mappingToken: number('mappingToken'),
    manifest,
  }
  if (fields.extra !== undefined) {
    try {
      const extra: unknown = JSON.parse(fields.extra)
      if (isPlainObject(extra)) record.extra = extra
    } catch (error) {
      throw corrupt(where, 'field extra does not parse', undefined, error)
    }
  }
  return record
}

/**
 * Parses a stored journal entry.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function parseJournalEntry(text: string, where: string): JournalEntry {
  try {
    const value: unknown = JSON.parse(text)
    if (isPlainObject(value) && isNumber(value.recordedAt)) {
      return { recordedAt: value.recordedAt, step: checkJournalStep(value.step, true) }
    }
  } catch (error) {
    throw corrupt(where, 'a journal entry does not parse', undefined, error)
  }
  throw corrupt(where, 'a journal entry does not parse', undefined)
}

/**
 * The key-safe hash of a conversation id: SHA-256, base64url, first 22 characters (132 bits). Stores put it
 * in keys and indexes instead of the raw id, so no id can inject separators or glob characters.
 */
export function conversationHash(conversationId: string): string {
  return createHash('sha256').update(conversationId, 'utf8').digest('base64url').slice(0, 22)
}
