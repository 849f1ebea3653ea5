// Reading checkpoints back from their stored parts (the layout is in commands/includes/checkpoints.lua):
// per turn T, field T = '<createdAt>:<journalLength>:<sandboxId>', T:snapshot and T:manifest = JSON (absent:
// null). Anything else is STORE_CORRUPT naming the key, checked with the kit's parseStoredCheckpoint.
import type { Checkpoint } from '@sandkeep/core'
import { corruptRecordError, parseStoredCheckpoint, parseStoredCheckpoints } from '@sandkeep/core/store'

const META = /^(\d+):(\d+):(.+)$/s
const FIELD = /^([1-9]\d*)(|:snapshot|:manifest)$/

function parseJson(text: string | null, where: string): unknown {
  if (text === null) return null
  try {
    return JSON.parse(text)
  } catch (error) {
    throw corruptRecordError(where, 'a checkpoint part does not parse', undefined, error)
  }
}

/**
 * A checkpoint from its parts: the turn, its first field, and the snapshot and manifest JSON (`null` when
 * absent).
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function checkpointFromParts(
  parts: { turn: string; meta: string; snapshot: string | null; manifest: string | null },
  where: string,
): Checkpoint {
  const meta = META.exec(parts.meta)
  if (!meta) throw corruptRecordError(where, `checkpoint ${parts.turn.slice(0, 20)} has a bad first field`)
  return parseStoredCheckpoint(
    {
      turn: Number(parts.turn),
      createdAt: Number(meta[1]),
      sandboxId: meta[3],
      snapshot: parseJson(parts.snapshot, where),
      journalLength: Number(meta[2]),
      manifest: parseJson(parts.manifest, where),
    },
    where,
  )
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null)

/**
 * A checkpoint as a script replies it: `[turn, first field, snapshot JSON or null, manifest JSON or null]`.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function checkpointOfReply(reply: unknown, where: string): Checkpoint {
  if (!Array.isArray(reply) || typeof reply[0] !== 'string' || typeof reply[1] !== 'string') {
    throw corruptRecordError(where, 'a checkpoint reply is not [turn, meta, snapshot, manifest]')
  }
  return checkpointFromParts(
    { turn: reply[0], meta: reply[1], snapshot: text(reply[2]), manifest: text(reply[3]) },
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
 * Every checkpoint of a session from the hash's flat field/value list, oldest first.
 * @throws SandkeepError STORE_CORRUPT naming `where`
 */
export function checkpointsFromHash(flat: readonly unknown[], where: string): Checkpoint[] {
  const turns = new Map<string, { meta?: string; snapshot: string | null; manifest: string | null }>()
  for (let index = 0; index + 1 < flat.length; index += 2) {
    const field = FIELD.exec(String(flat[index]))
    const value = flat[index + 1]
    if (!field || typeof value !== 'string') {
      throw corruptRecordError(
        where,
        `it holds a field no store writes (${String(flat[index]).slice(0, 40)})`,
      )
    }
    const [, turn, part] = field as unknown as [string, string, string]
    const parts = turns.get(turn) ?? { snapshot: null, manifest: null }
    if (part === '') parts.meta = value
    else if (part === ':snapshot') parts.snapshot = value
    else parts.manifest = value
    turns.set(turn, parts)
  }
  const checkpoints = [...turns].map(([turn, parts]) => {
    if (parts.meta === undefined) throw corruptRecordError(where, `checkpoint ${turn} has no first field`)
    return checkpointFromParts({ ...parts, turn, meta: parts.meta }, where)
  })
  checkpoints.sort((a, b) => a.turn - b.turn)
  return parseStoredCheckpoints(checkpoints, where)
}
