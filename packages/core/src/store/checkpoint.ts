// Checkpoints, rewinds and forks as every store sees them: the input checks of `release`'s `checkpoint`,
// `rewind` and `createFork` (run before any I/O), the strict reading of stored checkpoints and of a record's
// pending `restore` (STORE_CORRUPT, never repaired), and the two errors of branching.
import { SandkeepError } from '../errors.js'
import type { JournalStep } from '../journal.js'
import type {
  Checkpoint,
  CheckpointInput,
  CheckpointSnapshot,
  CreateForkInput,
  RewindInput,
  SessionRestore,
  TurnManifest,
} from '../session-store.js'
import {
  CONTROL_CHARACTERS,
  invalidArgument,
  rejectUnknownOptions,
  type SessionKey,
  validateConversationId,
  validateInteger,
  validateSandboxId,
  validateSnapshotId,
} from '../validation.js'
import { corruptRecordError, type JournalLimits, journalFull } from './errors.js'
import { checkJournalStep, serializeJournalEntry } from './journal-step.js'
import { checkTtlMs, MAX_PROVIDER_ID_BYTES, MAX_TEMPLATE_BYTES, utf8Bytes } from './limits.js'
import { checkManifest } from './manifest.js'
import { isPlainObject } from './shape.js'

/** Most checkpoints a session keeps (`CheckpointInput.keep`). */
export const MAX_CHECKPOINTS_KEPT = 1000
/** Highest turn a rewind or fork may name. */
export const MAX_CHECKPOINT_TURN = 1e9

/** `null`, or `value` checked as printable text of 1 to `maxBytes` bytes (INVALID_ARGUMENT naming `name`). */
function nullableText(name: string, value: unknown, maxBytes: number): string | null {
  if (value === null) return null
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    utf8Bytes(value) > maxBytes ||
    CONTROL_CHARACTERS.test(value)
  ) {
    throw invalidArgument(name, `must be null or 1 to ${maxBytes} bytes of printable text.`)
  }
  return value
}

/**
 * Checks a checkpoint's snapshot: `null`, or `{ snapshotId, keeps: { files, memory } }` with a snapshot id
 * as `validateSnapshotId` takes it. Returns a copy holding only those fields.
 * @throws SandkeepError INVALID_ARGUMENT naming `name`
 */
export function checkSnapshot(name: string, snapshot: unknown): CheckpointSnapshot | null {
  if (snapshot === null) return null
  if (!isPlainObject(snapshot)) throw invalidArgument(name, 'must be null or { snapshotId, keeps }.')
  rejectUnknownOptions(name, snapshot, ['snapshotId', 'keeps'])
  const snapshotId = validateSnapshotId(snapshot.snapshotId)
  const keeps = snapshot.keeps
  if (!isPlainObject(keeps)) throw invalidArgument(`${name}.keeps`, 'must be { files, memory }.')
  rejectUnknownOptions(`${name}.keeps`, keeps, ['files', 'memory'])
  if (typeof keeps.files !== 'boolean' || typeof keeps.memory !== 'boolean') {
    throw invalidArgument(`${name}.keeps`, 'must be { files: boolean, memory: boolean }.')
  }
  return { snapshotId, keeps: { files: keeps.files, memory: keeps.memory } }
}

/**
 * Checks `ReleaseInput.checkpoint`: the sandbox the snapshot is of, the snapshot or `null`, and how many
 * checkpoints to keep (1 to 1000).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkCheckpointInput(checkpoint: unknown): CheckpointInput {
  if (!isPlainObject(checkpoint)) {
    throw invalidArgument('checkpoint', 'must be an object { sandboxId, snapshot, keep }.')
  }
  rejectUnknownOptions('checkpoint', checkpoint, ['sandboxId', 'snapshot', 'keep'])
  return {
    sandboxId: validateSandboxId(checkpoint.sandboxId),
    snapshot: checkSnapshot('checkpoint.snapshot', checkpoint.snapshot),
    keep: validateInteger('checkpoint.keep', checkpoint.keep, 1, MAX_CHECKPOINTS_KEPT),
  }
}

/** Checked {@link RewindInput}, its TTL filled in. */
export type CheckedRewindInput = Required<RewindInput>

/**
 * Checks the input of `rewind`: `toTurn` an integer from 0 to 1e9, `expectedSandboxId` given (null or a
 * sandbox id).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkRewindInput(input: unknown, defaultTtlMs: number): CheckedRewindInput {
  if (!isPlainObject(input)) throw invalidArgument('rewind input', 'must be an object.')
  rejectUnknownOptions('rewind input', input, ['toTurn', 'expectedSandboxId', 'ttlMs'])
  if (input.expectedSandboxId === undefined) {
    throw invalidArgument(
      'expectedSandboxId',
      'is required: null when no sandbox is mapped, else the id mapped now.',
    )
  }
  return {
    toTurn: validateInteger('toTurn', input.toTurn, 0, MAX_CHECKPOINT_TURN),
    expectedSandboxId: input.expectedSandboxId === null ? null : validateSandboxId(input.expectedSandboxId),
    ttlMs: checkTtlMs(input.ttlMs, defaultTtlMs),
  }
}

/** Checked {@link CreateForkInput}: the checkpoint narrowed to what a fork takes, the TTL filled in. */
export interface CheckedCreateForkInput {
  fromConversationId: string
  fromSandboxId: string | null
  checkpoint: { turn: number; snapshot: CheckpointSnapshot | null; manifest: TurnManifest | null }
  journal: JournalStep[]
  providerId: string | null
  template: string | null
  ttlMs: number
}

const FORK_FIELDS = [
  'fromConversationId',
  'fromSandboxId',
  'checkpoint',
  'journal',
  'providerId',
  'template',
  'ttlMs',
]
/** A whole {@link Checkpoint} may be passed; the fork takes its turn, snapshot and manifest. */
const FORK_CHECKPOINT_FIELDS = ['turn', 'snapshot', 'manifest', 'createdAt', 'sandboxId', 'journalLength']

/**
 * Checks the input of `createFork`: the source's conversation id and sandbox, the checkpoint's turn (an
 * integer from 0), snapshot and manifest, the journal's steps (each as `appendJournal` checks it), the
 * provider and template. The journal's size is checked against the store's limits as it is written
 * ({@link forkJournal}).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkCreateForkInput(input: unknown, defaultTtlMs: number): CheckedCreateForkInput {
  if (!isPlainObject(input)) throw invalidArgument('createFork input', 'must be an object.')
  rejectUnknownOptions('createFork input', input, FORK_FIELDS)
  const checkpoint = input.checkpoint
  if (!isPlainObject(checkpoint)) {
    throw invalidArgument('checkpoint', 'must be the checkpoint forked from { turn, snapshot, manifest }.')
  }
  rejectUnknownOptions('checkpoint', checkpoint, FORK_CHECKPOINT_FIELDS)
  if (!Array.isArray(input.journal)) {
    throw invalidArgument(
      'journal',
      'must be an array of journal steps (the source journal up to the checkpoint).',
    )
  }
  const manifest = checkpoint.manifest
  return {
    fromConversationId: validateConversationId(input.fromConversationId),
    fromSandboxId:
      input.fromSandboxId === null || input.fromSandboxId === undefined
        ? null
        : validateSandboxId(input.fromSandboxId),
    checkpoint: {
      turn: validateInteger('checkpoint.turn', checkpoint.turn, 0, MAX_CHECKPOINT_TURN),
      snapshot: checkSnapshot('checkpoint.snapshot', checkpoint.snapshot ?? null),
      manifest: manifest === null || manifest === undefined ? null : checkManifest(manifest),
    },
    journal: input.journal.map((step: unknown) => checkJournalStep(step)),
    providerId: nullableText('providerId', input.providerId ?? null, MAX_PROVIDER_ID_BYTES),
    template: nullableText('template', input.template ?? null, MAX_TEMPLATE_BYTES),
    ttlMs: checkTtlMs(input.ttlMs, defaultTtlMs),
  }
}

/**
 * A fork's journal as stored entries recorded at `now`, with their bytes, or JOURNAL_FULL (nothing written)
 * when they pass the store's step-count or byte limit.
 * @throws SandkeepError JOURNAL_FULL
 */
export function forkJournal(
  key: SessionKey,
  steps: readonly JournalStep[],
  now: number,
  limits: JournalLimits,
): { entries: string[]; bytes: number } {
  const entries = steps.map((step) => serializeJournalEntry(now, step))
  const bytes = entries.reduce((sum, entry) => sum + utf8Bytes(entry), 0)
  if (entries.length > limits.maxJournalSteps || bytes > limits.maxJournalBytes) {
    throw journalFull(key, { steps: entries.length, bytes }, limits)
  }
  return { entries, bytes }
}

/** The pending restore a fork writes, dated `at` (store clock). */
export function forkRestore(input: CheckedCreateForkInput, at: number): SessionRestore {
  return {
    kind: 'forked',
    turn: input.checkpoint.turn,
    snapshot: input.checkpoint.snapshot,
    fromSandboxId: input.fromSandboxId,
    fromConversationId: input.fromConversationId,
    at,
  }
}

/** Runs an INVALID_ARGUMENT check on a stored value, turning its failure into STORE_CORRUPT naming `where`. */
function stored<T>(where: string, what: string, check: () => T): T {
  try {
    return check()
  } catch (error) {
    const why = SandkeepError.isInstance(error) ? error.message : String(error)
    throw corruptRecordError(where, `${what}: ${why}`, undefined, error)
  }
}

const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
const isTime = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0

const CHECKPOINT_FIELDS = ['turn', 'createdAt', 'sandboxId', 'snapshot', 'journalLength', 'manifest']

/**
 * Checks a checkpoint read back from a store: the fields and values a release could have written (a turn
 * from 1, a time, a sandbox id, a snapshot or null, a journal length, a manifest or null). Returns a copy.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function parseStoredCheckpoint(value: unknown, where: string): Checkpoint {
  if (!isPlainObject(value)) throw corruptRecordError(where, 'a checkpoint is not an object')
  const unknown = Object.keys(value).find((name) => !CHECKPOINT_FIELDS.includes(name))
  if (unknown !== undefined)
    throw corruptRecordError(where, `a checkpoint has an unknown field ${JSON.stringify(unknown)}`)
  const { turn, createdAt, journalLength } = value
  if (!isCount(turn) || turn < 1 || !isTime(createdAt) || !isCount(journalLength)) {
    throw corruptRecordError(where, 'a checkpoint has a bad turn, createdAt or journalLength')
  }
  return {
    turn,
    createdAt,
    sandboxId: stored(where, 'a checkpoint has a bad sandboxId', () => validateSandboxId(value.sandboxId)),
    snapshot: stored(where, 'a checkpoint has a bad snapshot', () =>
      checkSnapshot('snapshot', value.snapshot ?? null),
    ),
    journalLength,
    manifest:
      value.manifest === null || value.manifest === undefined
        ? null
        : stored(where, 'a checkpoint has a bad manifest', () => checkManifest(value.manifest)),
  }
}

/**
 * Checks stored checkpoints as a whole: each one, and their order (oldest first, one per turn).
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function parseStoredCheckpoints(values: readonly unknown[], where: string): Checkpoint[] {
  const checkpoints = values.map((value) => parseStoredCheckpoint(value, where))
  for (let index = 1; index < checkpoints.length; index += 1) {
    if (checkpoints[index]!.turn <= checkpoints[index - 1]!.turn) {
      throw corruptRecordError(where, 'its checkpoints are not one per turn, oldest first')
    }
  }
  return checkpoints
}

const RESTORE_FIELDS = ['kind', 'turn', 'snapshot', 'fromSandboxId', 'fromConversationId', 'at']

/**
 * Checks a record's pending restore as read back from a store (`null` for none): the fields a rewind or a
 * fork writes. Returns a copy.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function parseStoredRestore(value: unknown, where: string): SessionRestore | null {
  if (value === null) return null
  const bad = (why: string) => corruptRecordError(where, `field restore ${why}`)
  if (!isPlainObject(value)) throw bad('is not an object or null')
  const unknown = Object.keys(value).find((name) => !RESTORE_FIELDS.includes(name))
  if (unknown !== undefined) throw bad(`has an unknown field ${JSON.stringify(unknown)}`)
  if (value.kind !== 'rewound' && value.kind !== 'forked') throw bad('has an unknown kind')
  if (!isCount(value.turn) || !isTime(value.at)) throw bad('has a bad turn or time')
  const restore: SessionRestore = {
    kind: value.kind,
    turn: value.turn,
    snapshot: stored(where, 'field restore has a bad snapshot', () =>
      checkSnapshot('snapshot', value.snapshot ?? null),
    ),
    fromSandboxId:
      value.fromSandboxId === null || value.fromSandboxId === undefined
        ? null
        : stored(where, 'field restore has a bad fromSandboxId', () =>
            validateSandboxId(value.fromSandboxId),
          ),
    at: value.at,
  }
  if (value.fromConversationId !== undefined) {
    restore.fromConversationId = stored(where, 'field restore has a bad fromConversationId', () =>
      validateConversationId(value.fromConversationId),
    )
  }
  return restore
}

/** CHECKPOINT_NOT_FOUND for `key`: `turn` is neither 0 nor one of the `kept` turns. Nothing was written. */
export function checkpointNotFound(key: SessionKey, turn: number, kept: readonly number[]): SandkeepError {
  const turns = kept.length === 0 ? 'none' : kept.join(', ')
  return new SandkeepError({
    code: 'CHECKPOINT_NOT_FOUND',
    message: `This session has no checkpoint of turn ${turn} (kept turns: ${turns}; 0 goes back to before the first turn). Nothing was changed; pick a kept turn.`,
    tenant: key.tenant,
    conversationId: key.conversationId,
  })
}

/**
 * SESSION_BUSY for a rewind of `key`: a turn holds the session (running, or pausing its sandbox); rewind once
 * it ended, at the latest after `retryAfterMs` (its remaining lease). Nothing was written.
 */
export function rewindBusy(key: SessionKey, retryAfterMs: number): SandkeepError {
  return new SandkeepError({
    code: 'SESSION_BUSY',
    message: `A turn of this conversation is under way (or pausing its sandbox); rewind once it ended (its lease lapses within ${Math.ceil(retryAfterMs)} ms). Nothing was changed.`,
    tenant: key.tenant,
    conversationId: key.conversationId,
    retryable: true,
    retryAfterMs,
  })
}

/** SESSION_EXISTS for `key`: a fork must start a new conversation. Nothing was written. */
export function sessionExists(key: SessionKey): SandkeepError {
  return new SandkeepError({
    code: 'SESSION_EXISTS',
    message:
      'A session with this conversation id already exists (a record, or a turn under way); fork into a new conversation id. Nothing was written.',
    tenant: key.tenant,
    conversationId: key.conversationId,
  })
}
