// The sandkeep part of a UI message's metadata: which session turn wrote the assistant message and the
// checkpoint at its end, small and JSON-safe (no manifest), so a chat that keeps its messages keeps its
// branch points with them. Read back, it gives the turn a new request starts from.
import type { Checkpoint } from '@sandkeep/core'
import { invalid } from '../errors.js'

/** What a turn puts under `sandkeep` in its assistant message's metadata. */
export interface SandkeepMessageMetadata {
  /** The session turn the message is the answer of (1-based): what `branch: { fromTurn }` takes. */
  turn: number
  /** The checkpoint at that turn's end. */
  checkpoint: {
    /** The platform snapshot's id; `null` when the checkpoint is the journal's position alone. */
    snapshotId: string | null
    /** Journal steps recorded by then (a restore without the snapshot replays that many). */
    journalLength: number
    /** When it was taken, epoch ms on the store's clock. */
    createdAt: number
  }
}

/** A chat message as far as sandkeep reads it: the AI SDK's `UIMessage` is one. */
export interface MessageWithMetadata {
  role: string
  metadata?: unknown
}

/** `{ sandkeep: ... }` for a message's metadata, from the checkpoint of the turn that wrote it. */
export function checkpointMetadata(checkpoint: Checkpoint): { sandkeep: SandkeepMessageMetadata } {
  return {
    sandkeep: {
      turn: checkpoint.turn,
      checkpoint: {
        snapshotId: checkpoint.snapshot?.snapshotId ?? null,
        journalLength: checkpoint.journalLength,
        createdAt: checkpoint.createdAt,
      },
    },
  }
}

/**
 * The sandkeep metadata of a message, or `undefined` when it has none. The messages come from the client:
 * only `turn` is ever used, and the session manager checks it against the checkpoints it keeps.
 * @throws SandkeepError INVALID_ARGUMENT when `metadata.sandkeep` is there but is not `{ turn, ... }` with
 *   an integer turn >= 1 (a client that altered it; rewinding on a guess would lose the user's state)
 */
export function sandkeepMetadataOf(message: MessageWithMetadata): SandkeepMessageMetadata | undefined {
  const metadata = message.metadata
  if (typeof metadata !== 'object' || metadata === null || !('sandkeep' in metadata)) return undefined
  const value = (metadata as { sandkeep: unknown }).sandkeep
  const turn = typeof value === 'object' && value !== null ? (value as { turn?: unknown }).turn : undefined
  if (typeof turn !== 'number' || !Number.isInteger(turn) || turn < 1) {
    throw invalid(
      `A ${message.role} message's metadata.sandkeep must be { turn, checkpoint } with an integer turn >= 1, as the turn wrote it; got turn ${String(turn)}.`,
    )
  }
  return value as SandkeepMessageMetadata
}

/**
 * The branch point of a request from the messages the chat sent (the history the new answer follows): the
 * turn of the last message with sandkeep metadata, or 0 when none has it. Passed as `branch`, it rewinds
 * only when the chat is behind the session: a regenerated answer (the last one left out), an edited
 * message (the ones after it left out). A normal request names the current turn, which rewinds nothing.
 * @throws SandkeepError INVALID_ARGUMENT for malformed sandkeep metadata (see {@link sandkeepMetadataOf})
 */
export function branchFromMessages(messages: readonly MessageWithMetadata[]): { fromTurn: number } {
  for (let index = messages.length - 1; index >= 0; index--) {
    const found = sandkeepMetadataOf(messages[index]!)
    if (found) return { fromTurn: found.turn }
  }
  return { fromTurn: 0 }
}
