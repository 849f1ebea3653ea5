// The `list` cursor: an opaque encoding of the last position returned, and the listing order.
import { invalidArgument } from '../contract/validation.js'

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
  throw invalidArgument('cursor', 'is not one this store returned; start again without a cursor.')
}

/** True when (`score`, `member`) comes after `position` in the listing order (score desc, member desc). */
export function isAfterListPosition(score: number, member: string, position: ListPosition): boolean {
  return score < position.score || (score === position.score && member < position.member)
}

/** Orders listed sessions as `list` returns them: score descending, then member descending. */
export function compareListPositions(a: ListPosition, b: ListPosition): number {
  return a.score !== b.score ? b.score - a.score : a.member < b.member ? 1 : -1
}
