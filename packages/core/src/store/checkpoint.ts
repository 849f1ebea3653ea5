// Checkpoints, rewinds and forks as every store sees them: the input checks of `release`'s `checkpoint`,
// `rewind` and `createFork` (run before any I/O), the strict reading of stored checkpoints and of a record's
// pending `restore` (STORE_CORRUPT, never repaired), and the two errors of branching.
import { randomBytes } from 'node:crypto'
import { SandkeepError } from '../contract/errors.js'
import type { JournalStep } from '../contract/journal.js'
import type {
  Checkpoint,
  CheckpointInput,
  CheckpointSnapshot,
  CreateForkInput,
  RewindInput,
  SessionRestore,
  TurnManifest,
} from '../contract/session-store.js'
import {
  CHECKPOINT_ID_PATTERN,
  CONTROL_CHARACTERS,
  invalidArgument,
  rejectUnknownOptions,
  type SessionKey,
  validateCheckpointId,
  validateConversationId,
  validateInteger,
  validateSandboxId,
  validateSnapshotId,
} from '../contract/validation.js'
import { corruptRecordError, type JournalLimits, journalFull } from './errors.js'
import { checkJournalStep, serializeJournalEntry } from './journal-step.js'
import { checkTtlMs, MAX_PROVIDER_ID_BYTES, MAX_TEMPLATE_BYTES, utf8Bytes } from './limits.js'
import { checkManifest } from './manifest.js'
import { isPlainObject } from './shape.js'

/** Most checkpoints a session keeps (`CheckpointInput.keep`). */
export const MAX_CHECKPOINTS_KEPT = 1000
/** Highest turn a rewind or fork may name. */
export const MAX_CHECKPOINT_TURN = 1e9
/** Ids of pruned checkpoints a store remembers, per session, so a restore to one can say it was pruned. */
export const MAX_PRUNED_IDS_REMEMBERED = 1000

/**
 * A new checkpoint id: `'ck_'` and 16 random bytes in base64url (22 characters). Random, never derived from
 * the session, so an id of one conversation says nothing of another's.
 */
export function newCheckpointId(): string {
  return `ck_${randomBytes(16).toString('base64url')}`
}

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
  rejectUnknownOptions('checkpoint', checkpoint, ['sandboxId', 'snapshot', 'keep', 'from'])
  if (checkpoint.from !== undefined && checkpoint.from !== 'turn-end' && checkpoint.from !== 'mid-turn') {
    throw invalidArgument('checkpoint.from', "must be 'turn-end' or 'mid-turn'.")
  }
  return {
    sandboxId: validateSandboxId(checkpoint.sandboxId),
    snapshot: checkSnapshot('checkpoint.snapshot', checkpoint.snapshot),
    keep: validateInteger('checkpoint.keep', checkpoint.keep, 1, MAX_CHECKPOINTS_KEPT),
    from: checkpoint.from ?? 'turn-end',
  }
}

/**
 * Checks the input of `checkpoint` (mid-turn): a release's checkpoint input and the manifest now.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkMidTurnCheckpointInput(input: unknown): Required<CheckpointInput> & {
  manifest: TurnManifest | null
} {
  if (!isPlainObject(input)) {
    throw invalidArgument('checkpoint input', 'must be an object { sandboxId, snapshot, keep, manifest }.')
  }
  const { manifest, ...rest } = input
  const checked = checkCheckpointInput({ ...rest, from: rest.from ?? 'mid-turn' })
  return {
    ...(checked as Required<CheckpointInput>),
    manifest: manifest === null || manifest === undefined ? null : checkManifest(manifest),
  }
}

/** Checked {@link RewindInput}, its TTL filled in: a checkpoint id (null = the root), or a depth. */
export type CheckedRewindInput = {
  expectedSandboxId: string | null
  ttlMs: number
} & ({ checkpoint: string | null; toTurn?: undefined } | { checkpoint?: undefined; toTurn: number })

/**
 * Checks where a restore or fork read goes: `checkpoint` (a checkpoint id, or null for the root), else
 * `toTurn` (an integer from 0 to 1e9), else neither (`allowNeither`: the head).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkCheckpointTarget(
  input: Record<string, unknown>,
  allowNeither: boolean,
): { checkpoint: string | null } | { toTurn: number } | Record<string, never> {
  if (input.checkpoint !== undefined) {
    return {
      checkpoint: input.checkpoint === null ? null : validateCheckpointId('checkpoint', input.checkpoint),
    }
  }
  if (input.toTurn !== undefined || !allowNeither) {
    return { toTurn: validateInteger('toTurn', input.toTurn, 0, MAX_CHECKPOINT_TURN) }
  }
  return {}
}

/**
 * Checks the input of `rewind`: `checkpoint` (an id or null) or `toTurn` (an integer from 0 to 1e9),
 * `expectedSandboxId` given (null or a sandbox id).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkRewindInput(input: unknown, defaultTtlMs: number): CheckedRewindInput {
  if (!isPlainObject(input)) throw invalidArgument('rewind input', 'must be an object.')
  rejectUnknownOptions('rewind input', input, ['checkpoint', 'toTurn', 'expectedSandboxId', 'ttlMs'])
  if (input.expectedSandboxId === undefined) {
    throw invalidArgument(
      'expectedSandboxId',
      'is required: null when no sandbox is mapped, else the id mapped now.',
    )
  }
  const target = checkCheckpointTarget(input, false) as { checkpoint: string | null } | { toTurn: number }
  return {
    ...target,
    expectedSandboxId: input.expectedSandboxId === null ? null : validateSandboxId(input.expectedSandboxId),
    ttlMs: checkTtlMs(input.ttlMs, defaultTtlMs),
  }
}

/** Checked {@link CreateForkInput}: the checkpoint narrowed to what a fork takes, the TTL filled in. */
export interface CheckedCreateForkInput {
  fromConversationId: string
  fromSandboxId: string | null
  checkpoint: {
    id: string | null
    turn: number
    snapshot: CheckpointSnapshot | null
    manifest: TurnManifest | null
  }
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
const FORK_CHECKPOINT_FIELDS = [
  'id',
  'parentId',
  'turn',
  'snapshot',
  'manifest',
  'createdAt',
  'sandboxId',
  'journalLength',
  'journalBytes',
  'from',
]

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
      id:
        checkpoint.id === undefined || checkpoint.id === null
          ? null
          : validateCheckpointId('checkpoint.id', checkpoint.id),
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
    checkpointId: input.checkpoint.id,
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

const CHECKPOINT_FIELDS = [
  'id',
  'parentId',
  'turn',
  'createdAt',
  'sandboxId',
  'snapshot',
  'journalLength',
  'journalBytes',
  'manifest',
  'from',
]
const isId = (value: unknown): value is string =>
  typeof value === 'string' && CHECKPOINT_ID_PATTERN.test(value)

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
  // A checkpoint written before checkpoint trees has no id: it gets a fixed one from its turn (its session's
  // checkpoints were one per turn), which its session's store calls accept as any other.
  const id = value.id === undefined ? legacyCheckpointId(turn) : value.id
  const parentId = value.parentId === undefined ? null : value.parentId
  if (!isId(id) || (parentId !== null && !isId(parentId))) {
    throw corruptRecordError(where, 'a checkpoint has a bad id or parentId')
  }
  if (value.from !== undefined && value.from !== 'turn-end' && value.from !== 'mid-turn') {
    throw corruptRecordError(where, 'a checkpoint has a bad from')
  }
  if (value.journalBytes !== undefined && !isCount(value.journalBytes)) {
    throw corruptRecordError(where, 'a checkpoint has a bad journalBytes')
  }
  return {
    id,
    parentId,
    ...(value.from === undefined ? {} : { from: value.from }),
    ...(value.journalBytes === undefined ? {} : { journalBytes: value.journalBytes }),
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

/** The id a checkpoint written before checkpoint trees reads with: fixed by its turn. */
export function legacyCheckpointId(turn: number): string {
  return `ck_legacy${turn.toString(36).padStart(16, '0')}`
}

/**
 * Checks stored checkpoints as a whole: each one, and that their ids are distinct. A set written before
 * checkpoint trees (no ids, one per turn, oldest first) reads as one branch: each one's parent is the one
 * before it.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function parseStoredCheckpoints(values: readonly unknown[], where: string): Checkpoint[] {
  const checkpoints = values.map((value) => parseStoredCheckpoint(value, where))
  const ids = new Set<string>()
  for (const [index, checkpoint] of checkpoints.entries()) {
    if (ids.has(checkpoint.id)) throw corruptRecordError(where, 'two of its checkpoints share an id')
    ids.add(checkpoint.id)
    const raw = values[index] as Record<string, unknown>
    if (raw.id === undefined && index > 0) checkpoint.parentId = checkpoints[index - 1]!.id
  }
  return checkpoints
}

const RESTORE_FIELDS = [
  'kind',
  'turn',
  'checkpointId',
  'snapshot',
  'fromSandboxId',
  'fromConversationId',
  'at',
]

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
  if (value.checkpointId !== undefined) {
    if (value.checkpointId !== null && !isId(value.checkpointId)) throw bad('has a bad checkpointId')
    restore.checkpointId = value.checkpointId
  }
  if (value.fromConversationId !== undefined) {
    restore.fromConversationId = stored(where, 'field restore has a bad fromConversationId', () =>
      validateConversationId(value.fromConversationId),
    )
  }
  return restore
}

/**
 * CHECKPOINT_NOT_FOUND for `key`: `target` (a checkpoint id, or a depth on the head's path) is not one of
 * its kept checkpoints; `pruned` when the store remembers pruning it. Nothing was written.
 */
export function checkpointNotFound(
  key: SessionKey,
  target: { checkpoint: string } | { toTurn: number },
  detail: { pruned?: boolean; kept?: number; depth?: number },
): SandkeepError {
  const what =
    'checkpoint' in target
      ? `checkpoint ${target.checkpoint}`
      : `checkpoint of turn ${target.toTurn} on the current branch`
  const why = detail.pruned
    ? 'it was pruned (the checkpoints option keeps the newest `keep` checkpoints and the head; raise keep to keep more)'
    : 'checkpoint' in target
      ? "it is not one of this conversation's checkpoints (another conversation's or tenant's, mistyped, or never taken)"
      : detail.depth !== undefined && target.toTurn > detail.depth
        ? `the current branch has ${detail.depth} turn(s) so far`
        : detail.kept === 0
          ? 'none was taken (the session has no checkpoint; they are taken with the checkpoints option)'
          : 'none at that depth is kept on the path to the current head'
  return new SandkeepError({
    code: 'CHECKPOINT_NOT_FOUND',
    message: `This session has no ${what}: ${why}; ${detail.kept ?? 0} checkpoint(s) kept. Nothing was changed; take an id from listCheckpoints (or null for the state before the first turn).`,
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
