import { SandkeepError } from './errors.js'
import type { SandboxNetworkPolicy } from './sandbox-provider.js'

/** Largest conversation id, in UTF-8 bytes. */
export const MAX_CONVERSATION_ID_BYTES = 512
/** Tenant ids: short, and safe in keys, metadata and file names. */
export const TENANT_PATTERN = /^[A-Za-z0-9._-]{1,64}$/
/** The tenant used when a call names none. */
export const DEFAULT_TENANT = 'default'

/** C0 controls, DEL, C1 controls, and the Unicode line/paragraph separators: refused in ids and keys. */
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

const encoder = new TextEncoder()

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'string' ? `"${value.slice(0, 40)}"` : `a ${typeof value}`
}

/**
 * Checks a conversation id before any I/O: a non-empty string of at most 512 UTF-8 bytes without control
 * characters. Any other printable text is allowed (`:`, `{`, `*`, emoji): ids are hashed, never put in keys.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateConversationId(conversationId: unknown): string {
  if (typeof conversationId !== 'string') {
    throw invalid(`conversationId must be a string, got ${describe(conversationId)}.`)
  }
  if (conversationId.length === 0) {
    throw invalid('conversationId must not be empty: pass the id of the chat this turn belongs to.')
  }
  const bytes = encoder.encode(conversationId).byteLength
  if (bytes > MAX_CONVERSATION_ID_BYTES) {
    throw invalid(
      `conversationId is ${bytes} bytes; the limit is ${MAX_CONVERSATION_ID_BYTES}. Use a shorter id, or a hash of it.`,
    )
  }
  if (CONTROL_CHARACTERS.test(conversationId)) {
    throw invalid('conversationId contains a control character (newline, NUL, ...); strip it before calling.')
  }
  if (conversationId.isWellFormed && !conversationId.isWellFormed()) {
    throw invalid('conversationId contains a lone UTF-16 surrogate; pass well-formed text.')
  }
  if (BIDI_CONTROLS.test(conversationId)) {
    throw invalid(
      'conversationId contains a bidirectional control character (such as U+202E RIGHT-TO-LEFT OVERRIDE), which makes an id display as another; strip it before calling.',
    )
  }
  return conversationId
}

/**
 * Bidirectional formatting characters: embeddings, overrides, isolates and marks. An id holding one can
 * display as a different id (in a CLI listing, a log, a page), so ids refuse them.
 */
export const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/

/** A checkpoint id as stores generate them: `'ck_'` and 22 base64url characters. */
export const CHECKPOINT_ID_PATTERN = /^ck_[A-Za-z0-9_-]{22}$/

/**
 * Checks a checkpoint id before any I/O: a string in the shape stores generate (`ck_` and 22 base64url
 * characters), or `null` (the root) when `nullable`. Whether the conversation has it is the store's answer.
 * @throws SandkeepError INVALID_ARGUMENT naming `name`
 */
export function validateCheckpointId(name: string, value: unknown): string {
  if (typeof value !== 'string') {
    throw invalid(
      `${name} must be a checkpoint id string (from listCheckpoints or a turn end report), got ${describe(value)}.`,
    )
  }
  if (!CHECKPOINT_ID_PATTERN.test(value)) {
    throw invalid(
      `${name} is not a checkpoint id: ids are 'ck_' and 22 characters from A-Z a-z 0-9 _ - (take one from listCheckpoints). Nothing was changed.`,
    )
  }
  return value
}

/**
 * Checks a tenant id before any I/O: 1 to 64 characters from `A-Z a-z 0-9 . _ -`. `undefined` means
 * {@link DEFAULT_TENANT}.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateTenant(tenant: unknown): string {
  if (tenant === undefined) return DEFAULT_TENANT
  if (typeof tenant !== 'string') throw invalid(`tenant must be a string, got ${describe(tenant)}.`)
  if (!TENANT_PATTERN.test(tenant)) {
    throw invalid(
      `tenant ${JSON.stringify(tenant.slice(0, 80))} is not allowed: use 1 to 64 characters from A-Z, a-z, 0-9, '.', '_' and '-'.`,
    )
  }
  return tenant
}

/**
 * Checks a sandbox id as returned by a provider: a non-empty printable string of at most 256 bytes.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateSandboxId(sandboxId: unknown): string {
  return validatePlatformId('sandboxId', sandboxId)
}

/**
 * Checks a snapshot id as returned by a provider's `createSnapshot`: a non-empty printable string of at
 * most 256 bytes.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateSnapshotId(snapshotId: unknown): string {
  return validatePlatformId('snapshotId', snapshotId)
}

function validatePlatformId(name: string, id: unknown): string {
  if (typeof id !== 'string' || id.length === 0) {
    throw invalid(`${name} must be a non-empty string, got ${describe(id)}.`)
  }
  if (encoder.encode(id).byteLength > 256 || CONTROL_CHARACTERS.test(id)) {
    throw invalid(`${name} must be at most 256 bytes of printable text.`)
  }
  return id
}

/** Snapshot names (`CreateSnapshotOptions.name`): what E2B takes as a name, without a tag. */
export const SNAPSHOT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

/**
 * The name a snapshot was created under, from a name the platform lists: the part after the last `/` (E2B
 * prefixes the team's slug, local-e2b `local/`) and before the `:` of a tag.
 */
export function snapshotBaseName(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1)
  const tag = base.indexOf(':')
  return tag < 0 ? base : base.slice(0, tag)
}

/**
 * Checks `createSnapshot`'s options: an object with only `name` (matching {@link SNAPSHOT_NAME_PATTERN})
 * and `signal`.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateCreateSnapshotOptions(options: unknown): void {
  if (options === undefined) return
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalid(`createSnapshot options must be an object, got ${describe(options)}.`)
  }
  rejectUnknownOptions('createSnapshot options', options, ['name', 'signal'])
  const { name } = options as { name?: unknown }
  if (name !== undefined && (typeof name !== 'string' || !SNAPSHOT_NAME_PATTERN.test(name))) {
    throw invalid(
      `snapshot name ${describe(name)} is not allowed: use 1 to 128 characters from A-Z, a-z, 0-9, '.', '_' and '-', starting with a letter or digit.`,
    )
  }
}

/**
 * Checks `listSnapshots`' options: `namePrefix` (up to 128 characters a snapshot name may hold), `limit`
 * (1 to 1000), `cursor` (a non-empty string) and `signal`.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateListSnapshotsOptions(options: unknown): void {
  if (options === undefined) return
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalid(`listSnapshots options must be an object, got ${describe(options)}.`)
  }
  rejectUnknownOptions('listSnapshots options', options, ['namePrefix', 'limit', 'cursor', 'signal'])
  const { namePrefix, limit, cursor } = options as Record<string, unknown>
  if (
    namePrefix !== undefined &&
    (typeof namePrefix !== 'string' || !/^[A-Za-z0-9._-]{0,128}$/.test(namePrefix))
  ) {
    throw invalid(
      `namePrefix ${describe(namePrefix)} is not allowed: a snapshot name holds only A-Z, a-z, 0-9, '.', '_' and '-' (at most 128).`,
    )
  }
  if (limit !== undefined) validateInteger('listSnapshots limit', limit, 1, 1000)
  if (cursor !== undefined && (typeof cursor !== 'string' || cursor.length === 0)) {
    throw invalid(`listSnapshots cursor must be a non-empty string, got ${describe(cursor)}.`)
  }
}

/**
 * Checks a sandbox port number: an integer from 1 to 65535.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validatePort(port: unknown): number {
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535) {
    throw invalid(`port must be an integer from 1 to 65535, got ${describe(port)}.`)
  }
  return port
}

/**
 * Checks a network policy for `SandboxProvider.updateNetwork`: only `allowInternetAccess` (a boolean),
 * `allowOut` and `denyOut` (arrays of non-empty destination strings), nothing else.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateNetworkPolicy(policy: unknown): SandboxNetworkPolicy {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    throw invalid(`network policy must be an object, got ${describe(policy)}.`)
  }
  rejectUnknownOptions('network policy', policy, ['allowInternetAccess', 'allowOut', 'denyOut'])
  const { allowInternetAccess, allowOut, denyOut } = policy as Record<string, unknown>
  if (allowInternetAccess !== undefined && typeof allowInternetAccess !== 'boolean') {
    throw invalidArgument('network policy allowInternetAccess', 'must be a boolean.')
  }
  for (const [name, list] of [
    ['allowOut', allowOut],
    ['denyOut', denyOut],
  ] as const) {
    if (list === undefined) continue
    if (!Array.isArray(list) || !list.every((entry) => typeof entry === 'string' && entry.length > 0)) {
      throw invalidArgument(
        `network policy ${name}`,
        'must be an array of non-empty strings (CIDR, IP or host).',
      )
    }
    if (list.some((entry: string) => CONTROL_CHARACTERS.test(entry) || /\s/.test(entry))) {
      throw invalidArgument(`network policy ${name}`, 'has an entry with a space or a control character.')
    }
  }
  return policy as SandboxNetworkPolicy
}

/** A session key: the pair that names one session. */
export interface SessionKey {
  /** Tenant id, validated by {@link validateTenant}. */
  tenant: string
  /** Conversation id, validated by {@link validateConversationId}. */
  conversationId: string
}

/**
 * Validates both parts of a session key.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateSessionKey(conversationId: unknown, tenant?: unknown): SessionKey {
  return { tenant: validateTenant(tenant), conversationId: validateConversationId(conversationId) }
}

/**
 * Checks that a number option is a finite integer within bounds.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function validateInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(`${name} must be an integer from ${min} to ${max}, got ${describe(value)}.`)
  }
  return value
}

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

/**
 * The one way to say a parameter is unusable: an INVALID_ARGUMENT SandkeepError whose message starts with
 * the parameter's name (`options.leaseMs must be …`). Thrown before any I/O.
 */
export function invalidArgument(param: string, message: string): SandkeepError {
  return invalid(`${param} ${message}`)
}

/**
 * Refuses a key of `value` that is not in `known`, with one wording everywhere:
 * `<what> has an unknown option "<key>"; known: a, b.`
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function rejectUnknownOptions(what: string, value: object, known: Iterable<string>): void {
  const allowed = [...known]
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw invalidArgument(
        what,
        `has an unknown option "${key.slice(0, 40)}"; known: ${allowed.join(', ')}.`,
      )
    }
  }
}
