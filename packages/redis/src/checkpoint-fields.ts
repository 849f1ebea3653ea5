// Reading checkpoints back from their stored parts (the layout is in commands/includes/checkpoints.lua): per
// node id C, field C = '<seq>:<createdAt>:<journalLength>:<pathBytes>:<turn>:<parentId|->:<k|b>:<e|m>:<sandboxId>',
// C:snapshot and C:manifest = JSON (absent: null), C:journal = the node's journal part. Anything else a
// script writes ('seq', 'pruned') is skipped, as are the turn-keyed fields of earlier versions; a damaged
// part is STORE_CORRUPT naming the key, checked with the kit's parseStoredCheckpoint.
import { type Checkpoint, corruptRecordError, parseStoredCheckpoint } from '@sandkeep/core/store'

const META = /^(\d+):(\d+):(\d+):(\d+):(\d+):([\w-]+):([kb]):([em]):(.+)$/s
const NODE_FIELD = /^(ck_[\w-]{22})(|:snapshot|:manifest|:journal)$/
/** Fields of the tree itself, and of the turn-keyed layout of earlier versions (never read). */
const OTHER_FIELD = /^(seq|pruned|[1-9]\d*(|:snapshot|:manifest))$/

function parseJson(text: string | null, where: string): unknown {
  if (text === null) return null
  try {
    return JSON.parse(text)
  } catch (error) {
    throw corruptRecordError(where, 'a checkpoint part does not parse', undefined, error)
  }
}

/** A node's first field, parsed; `undefined` when it is not one a script writes. */
export function parseNodeMeta(meta: string):
  | {
      sequence: number
      createdAt: number
      journalLength: number
      journalBytes: number
      turn: number
      parentId: string | null
      kept: boolean
      from: 'turn-end' | 'mid-turn'
      sandboxId: string
    }
  | undefined {
  const match = META.exec(meta)
  if (!match) return undefined
  return {
    sequence: Number(match[1]),
    createdAt: Number(match[2]),
    journalLength: Number(match[3]),
    journalBytes: Number(match[4]),
    turn: Number(match[5]),
    parentId: match[6] === '-' ? null : match[6]!,
    kept: match[7] === 'k',
    from: match[8] === 'm' ? 'mid-turn' : 'turn-end',
    sandboxId: match[9]!,
  }
}

/**
 * A checkpoint from its parts: the id, its first field, and the snapshot and manifest JSON (`null` when
 * absent).
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function checkpointFromParts(
  parts: { id: string; meta: string; snapshot: string | null; manifest: string | null },
  where: string,
): Checkpoint {
  const meta = parseNodeMeta(parts.meta)
  if (!meta) throw corruptRecordError(where, `checkpoint ${parts.id.slice(0, 25)} has a bad first field`)
  return parseStoredCheckpoint(
    {
      id: parts.id,
      parentId: meta.parentId,
      turn: meta.turn,
      createdAt: meta.createdAt,
      sandboxId: meta.sandboxId,
      snapshot: parseJson(parts.snapshot, where),
      journalLength: meta.journalLength,
      manifest: parseJson(parts.manifest, where),
      from: meta.from,
      journalBytes: meta.journalBytes,
    },
    where,
  )
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null)

/**
 * A checkpoint as a script replies it: `[id, first field, snapshot JSON or null, manifest JSON or null]`.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function checkpointOfReply(reply: unknown, where: string): Checkpoint {
  if (!Array.isArray(reply) || typeof reply[0] !== 'string' || typeof reply[1] !== 'string') {
    throw corruptRecordError(where, 'a checkpoint reply is not [id, meta, snapshot, manifest]')
  }
  return checkpointFromParts(
    { id: reply[0], meta: reply[1], snapshot: text(reply[2]), manifest: text(reply[3]) },
    where,
  )
}

/** Checkpoints as a script replies a list of them (an empty reply: none). */
export function checkpointsOfReply(reply: unknown, where: string): Checkpoint[] {
  if (reply === null || reply === undefined) return []
  if (!Array.isArray(reply)) throw corruptRecordError(where, 'the checkpoints reply is not a list')
  return reply.map((entry) => checkpointOfReply(entry, where))
}

/**
 * The kept checkpoints of a session from the hash's flat field/value list, oldest first (by creation).
 * Bare nodes (pruned ancestors of kept ones) are checked and left out.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function checkpointsFromHash(flat: readonly unknown[], where: string): Checkpoint[] {
  const nodes = new Map<string, { meta?: string; snapshot: string | null; manifest: string | null }>()
  for (let index = 0; index + 1 < flat.length; index += 2) {
    const name = String(flat[index])
    const value = flat[index + 1]
    if (typeof value !== 'string') throw corruptRecordError(where, `field ${name.slice(0, 40)} is not text`)
    const field = NODE_FIELD.exec(name)
    if (!field) {
      if (OTHER_FIELD.test(name)) continue
      throw corruptRecordError(where, `it holds a field no store writes (${name.slice(0, 40)})`)
    }
    const [, id, part] = field as unknown as [string, string, string]
    const parts = nodes.get(id) ?? { snapshot: null, manifest: null }
    if (part === '') parts.meta = value
    else if (part === ':snapshot') parts.snapshot = value
    else if (part === ':manifest') parts.manifest = value
    nodes.set(id, parts)
  }
  const kept: Array<{ sequence: number; checkpoint: Checkpoint }> = []
  for (const [id, parts] of nodes) {
    if (parts.meta === undefined) throw corruptRecordError(where, `checkpoint ${id} has no first field`)
    const checkpoint = checkpointFromParts({ ...parts, id, meta: parts.meta }, where)
    const meta = parseNodeMeta(parts.meta)!
    if (meta.kept) kept.push({ sequence: meta.sequence, checkpoint })
  }
  kept.sort((a, b) => a.sequence - b.sequence)
  return kept.map((entry) => entry.checkpoint)
}
