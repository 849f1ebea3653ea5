// Reading a stored record back: one text field per scalar, checked field by field, refused as STORE_CORRUPT
// when anything is off (never repaired, never overwritten).
import { createHash } from 'node:crypto'
import {
  SESSION_RECORD_SCHEMA_VERSION,
  type SessionRecord,
  type SessionSandboxState,
  type TurnManifest,
} from '../contract/session-store.js'
import { CHECKPOINT_ID_PATTERN, CONTROL_CHARACTERS, validateSandboxId } from '../contract/validation.js'
import { parseStoredRestore } from './checkpoint.js'
import { corruptRecordError } from './errors.js'
import { SANDBOX_STATES } from './input.js'
import { MAX_PROVIDER_ID_BYTES, MAX_TEMPLATE_BYTES, utf8Bytes } from './limits.js'
import { checkManifest } from './manifest.js'
import { isPlainObject } from './shape.js'

const NUMBER_TEXT = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/

type Fields = Readonly<Record<string, string | undefined>>

/** Readers of a record's fields that throw STORE_CORRUPT naming `where`. */
function fieldReaders(fields: Fields, where: string) {
  const number = (name: string): number => {
    const text = fields[name]
    // `1e400` matches the pattern but is Infinity: a count or time no clock or counter can reach.
    const value = text === undefined || !NUMBER_TEXT.test(text) ? Number.NaN : Number(text)
    if (!Number.isFinite(value)) throw corruptRecordError(where, `field ${name} is not a finite number`)
    return value
  }
  const json = <T>(name: string, why: string, parse: (value: unknown) => T): T | undefined => {
    const text = fields[name]
    if (text === undefined) return undefined
    try {
      return parse(JSON.parse(text))
    } catch (error) {
      throw corruptRecordError(where, why, undefined, error)
    }
  }
  return {
    number,
    nullableNumber: (name: string): number | null => (fields[name] === undefined ? null : number(name)),
    nullableText: (name: string): string | null => fields[name] ?? null,
    /** `'1'` true, `'0'` false, missing null. */
    nullableBoolean: (name: string): boolean | null => {
      const text = fields[name]
      if (text === undefined) return null
      if (text !== '0' && text !== '1') throw corruptRecordError(where, `field ${name} is not 0 or 1`)
      return text === '1'
    },
    json,
  }
}

/** Refuses a record of an unknown schema, with a missing field, or one naming another session. */
function checkIdentity(fields: Fields, where: string, expected: { tenant: string; conversationId?: string }) {
  if (fields.schemaVersion !== String(SESSION_RECORD_SCHEMA_VERSION)) {
    throw corruptRecordError(where, `unknown schemaVersion ${JSON.stringify(fields.schemaVersion ?? null)}`)
  }
  if (
    typeof fields.tenant !== 'string' ||
    typeof fields.conversationId !== 'string' ||
    !SANDBOX_STATES.includes(fields.state as SessionSandboxState)
  ) {
    throw corruptRecordError(where, 'a field is missing or has the wrong value')
  }
  if (
    fields.tenant !== expected.tenant ||
    (expected.conversationId !== undefined && fields.conversationId !== expected.conversationId)
  ) {
    throw corruptRecordError(where, 'it names another tenant or conversation')
  }
  return { tenant: fields.tenant, conversationId: fields.conversationId }
}

/**
 * Parses a stored record kept as one text field per scalar (a missing field is null) plus `manifest` (the
 * manifest's JSON), `restore` (the pending restore's JSON, absent when none) and `schemaVersion`. `expected` is the key the record must belong to (a mismatch means
 * a hash collision or tampering); `conversationId` may be left out when only the hash is known.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function parseRecordFields(
  fields: Fields,
  where: string,
  expected: { tenant: string; conversationId?: string },
): SessionRecord {
  const { tenant, conversationId } = checkIdentity(fields, where, expected)
  const read = fieldReaders(fields, where)
  const manifest: TurnManifest | null =
    read.json('manifest', 'the manifest does not parse', checkManifest) ?? null
  const record: SessionRecord = {
    schemaVersion: SESSION_RECORD_SCHEMA_VERSION,
    tenant,
    conversationId,
    sandboxId: read.nullableText('sandboxId'),
    providerId: read.nullableText('providerId'),
    template: read.nullableText('template'),
    createdAt: read.number('createdAt'),
    updatedAt: read.number('updatedAt'),
    lastTurnStartedAt: read.nullableNumber('lastTurnStartedAt'),
    lastTurnEndedAt: read.nullableNumber('lastTurnEndedAt'),
    turnCount: read.number('turnCount'),
    runningSeconds: read.number('runningSeconds'),
    pausedSeconds: read.number('pausedSeconds'),
    state: fields.state as SessionSandboxState,
    pausedAt: read.nullableNumber('pausedAt'),
    mappingToken: read.number('mappingToken'),
    manifest,
    lastTurnUsedSandbox: read.nullableBoolean('lastTurnUsedSandbox'),
    // Records written before branching have no restore field: nothing pending.
    restore:
      read.json('restore', 'field restore does not parse', (value) => parseStoredRestore(value, where)) ??
      null,
  }
  // Records written before checkpoint trees have no head field: their head is their newest checkpoint.
  if (fields.head !== undefined) record.head = fields.head === '' ? null : fields.head
  const extra = read.json('extra', 'field extra does not parse', (value) => value)
  if (isPlainObject(extra)) record.extra = extra
  return checkRecordValues(record, where)
}

/** Non-negative finite numbers: times (epoch ms) and seconds. */
const AMOUNTS = ['createdAt', 'updatedAt', 'runningSeconds', 'pausedSeconds'] as const
const NULLABLE_TIMES = ['lastTurnStartedAt', 'lastTurnEndedAt', 'pausedAt'] as const
/** Counters: non-negative safe integers. */
const COUNTS = ['turnCount', 'mappingToken'] as const

/**
 * Checks that a record's values are ones a store could have written: a sandbox id `setSandbox` would
 * accept, a short printable provider id and template, counts that are non-negative safe integers, times and
 * seconds that are non-negative, a known state, a pending restore a rewind or fork could have written. A store runs it on the record it holds before acting on it
 * (the stores read records through {@link parseRecordFields}, which runs it), so a damaged record is refused
 * before anything is written (its turn count, timestamps and lease stay as they were), never used.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function checkRecordValues(record: SessionRecord, where: string): SessionRecord {
  const bad = (field: string, why: string) => corruptRecordError(where, `field ${field} ${why}`)
  if (record.sandboxId !== null) {
    try {
      validateSandboxId(record.sandboxId)
    } catch {
      throw bad('sandboxId', 'is not a sandbox id (empty, over 256 bytes, or a control character)')
    }
  }
  const text = (field: 'providerId' | 'template', maxBytes: number) => {
    const value = record[field]
    if (value === null) return
    if (
      typeof value !== 'string' ||
      value.length === 0 ||
      utf8Bytes(value) > maxBytes ||
      CONTROL_CHARACTERS.test(value)
    ) {
      throw bad(field, `is not 1 to ${maxBytes} bytes of printable text`)
    }
  }
  text('providerId', MAX_PROVIDER_ID_BYTES)
  text('template', MAX_TEMPLATE_BYTES)
  for (const field of COUNTS) {
    const value = record[field]
    if (!Number.isSafeInteger(value) || value < 0) throw bad(field, 'is not a non-negative integer')
  }
  const amount = (field: string, value: unknown) => {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw bad(field, 'is not a non-negative number')
    }
  }
  for (const field of AMOUNTS) amount(field, record[field])
  for (const field of NULLABLE_TIMES) if (record[field] !== null) amount(field, record[field])
  if (!SANDBOX_STATES.includes(record.state)) throw bad('state', 'is not a known state')
  // A restore names the snapshot the next turn creates its sandbox from: a damaged one must not reach the
  // provider. (Absent, as in a record a store built before the field, is nothing pending.)
  if (record.restore !== null && record.restore !== undefined) parseStoredRestore(record.restore, where)
  if (
    record.head !== undefined &&
    record.head !== null &&
    (typeof record.head !== 'string' || !CHECKPOINT_ID_PATTERN.test(record.head))
  ) {
    throw bad('head', 'is not a checkpoint id')
  }
  return record
}

/**
 * The key-safe hash of a conversation id: SHA-256, base64url, first 22 characters (132 bits). Stores put it
 * in keys and indexes instead of the raw id, so no id can inject separators or glob characters.
 */
export function conversationHash(conversationId: string): string {
  return createHash('sha256').update(conversationId, 'utf8').digest('base64url').slice(0, 22)
}
