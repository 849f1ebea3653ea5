// The sandkeep part of a UI message's metadata: the id of the checkpoint the turn that wrote the assistant
// message ended on (and of the one it started from), small and JSON-safe (no manifest), so a chat that
// keeps its messages keeps its branch points with them. Read back from the history a request sends, it
// names the checkpoint the new answer starts from, on whichever branch of the chat's tree the user is.
import type { Checkpoint } from '@sandkeep/core'
import { invalid } from '../errors.js'
import { CHECKPOINT_ID_MAX, checkCheckpointId, type SandkeepTurnBranch } from './branch.js'

/** What a turn puts under `sandkeep` in its assistant message's metadata. */
export interface SandkeepMessageMetadata {
  /** The id of the checkpoint at the turn's end: what `branch: { checkpoint }` takes. */
  checkpoint: string
  /** The id of the checkpoint the turn started from (`null`: the root): where a regenerate goes back to. */
  parentCheckpoint: string | null
  /** The turn's depth on its branch (1-based: 1 = the conversation's first turn). */
  turn: number
  /** The platform snapshot's id; `null` when the checkpoint is the journal's position alone. */
  snapshotId: string | null
  /** Journal steps on the branch by then (a restore without the snapshot replays that many). */
  journalLength: number
  /** When it was taken, epoch ms on the store's clock. */
  createdAt: number
}

/** A chat message as far as sandkeep reads it: the AI SDK's `UIMessage` is one. */
export interface MessageWithMetadata {
  id?: string
  role: string
  metadata?: unknown
}

/** `{ sandkeep: ... }` for a message's metadata, from the checkpoint of the turn that wrote it. */
export function checkpointMetadata(checkpoint: Checkpoint): { sandkeep: SandkeepMessageMetadata } {
  return {
    sandkeep: {
      checkpoint: checkpoint.id,
      parentCheckpoint: checkpoint.parentId,
      turn: checkpoint.turn,
      snapshotId: checkpoint.snapshot?.snapshotId ?? null,
      journalLength: checkpoint.journalLength,
      createdAt: checkpoint.createdAt,
    },
  }
}

/**
 * The sandkeep metadata of a message, or `undefined` when it has none. It comes from the client: only the
 * checkpoint ids are ever used, and the session manager refuses one its conversation does not have.
 * Metadata written before checkpoints had ids (`{ turn, checkpoint: { snapshotId, ... } }`) names no
 * checkpoint: it reads as none.
 * @throws SandkeepError INVALID_ARGUMENT when `metadata.sandkeep` is there but is neither shape (a client
 *   that altered it; restoring on a guess would lose the user's state)
 */
export function sandkeepMetadataOf(message: MessageWithMetadata): SandkeepMessageMetadata | undefined {
  const metadata = message?.metadata
  if (typeof metadata !== 'object' || metadata === null || !('sandkeep' in metadata)) return undefined
  const value = (metadata as { sandkeep: unknown }).sandkeep
  const fields = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {}
  const { checkpoint, parentCheckpoint, turn } = fields
  const refuse = (why: string) =>
    invalid(
      `A ${String(message.role)} message's metadata.sandkeep must be { checkpoint, parentCheckpoint, turn, ... } as the turn wrote it; ${why}. Send the messages as the server streamed them, or without metadata.sandkeep to go on from the conversation's current state.`,
    )
  const isTurn = typeof turn === 'number' && Number.isInteger(turn) && turn >= 1
  // Written by a release before checkpoint ids: no id to restore to.
  if (isTurn && typeof checkpoint === 'object' && checkpoint !== null) return undefined
  if (!isTurn) throw refuse(`got turn ${String(turn)}`)
  if (checkCheckpointId(checkpoint) !== undefined) throw refuse(`checkpoint is not a checkpoint id`)
  if (parentCheckpoint !== null && checkCheckpointId(parentCheckpoint) !== undefined) {
    throw refuse('parentCheckpoint is neither null nor a checkpoint id')
  }
  return value as SandkeepMessageMetadata
}

/** What the AI SDK's DefaultChatTransport sends besides the messages (the request's `trigger` and `messageId`). */
export interface BranchRequest {
  /** `'submit-message'` (a new message, or an edit with `messageId`) or `'regenerate-message'`. */
  trigger?: 'submit-message' | 'regenerate-message' | undefined
  /** The message edited (submit) or answered again (regenerate). */
  messageId?: string | undefined
}

const TRIGGERS = ['submit-message', 'regenerate-message']

/**
 * The branch point of a request: the checkpoint the new answer starts from, read from the history it
 * follows (the messages the chat sent, or the ones the server stored and the new one), or `undefined`
 * when there is nothing to do (the turn goes on from the conversation's head).
 *
 * - The last checkpoint id in the history: `{ checkpoint }`. A regenerate leaves the regenerated answer
 *   out, an edit cuts the history before the edited message, a switch to another answer sends that
 *   answer's branch: each ends on the checkpoint the answer starts from. A normal request names the head.
 * - With `messageId` found in `messages` (a server that rebuilt the history from its own store and did not
 *   cut it), only the messages before it count; a regenerated answer with its metadata gives its
 *   `parentCheckpoint`.
 * - No checkpoint id in the history (messages stored without metadata, a client that sends only the last
 *   message): a regenerate is `{ regenerate: true }` (the head's parent: the answer the server gave last
 *   is the one answered again); anything else is `undefined`, never "before the first turn".
 * @throws SandkeepError INVALID_ARGUMENT for malformed sandkeep metadata (see {@link sandkeepMetadataOf})
 *   or a bad `trigger` / `messageId`
 */
export function branchFromMessages(
  messages: readonly MessageWithMetadata[],
  request: BranchRequest = {},
): Extract<SandkeepTurnBranch, { checkpoint: string | null } | { regenerate: true }> | undefined {
  if (!Array.isArray(messages)) throw invalid('branchFromMessages: messages must be an array of UI messages.')
  const { trigger, messageId } = request ?? {}
  if (trigger !== undefined && !TRIGGERS.includes(trigger)) {
    throw invalid(
      `branchFromMessages: trigger must be 'submit-message' or 'regenerate-message', got ${String(trigger)}.`,
    )
  }
  if (
    messageId !== undefined &&
    (typeof messageId !== 'string' || messageId.length > CHECKPOINT_ID_MAX * 4)
  ) {
    throw invalid('branchFromMessages: messageId must be the id of a message of the chat.')
  }
  let history: readonly MessageWithMetadata[] = messages
  // An empty id names no message (a stream without message ids gives its answers '').
  const at = !messageId ? -1 : messages.findIndex((message) => message?.id === messageId)
  if (at !== -1) {
    const target = messages[at]!
    if (trigger === 'regenerate-message' && target.role === 'assistant') {
      const own = sandkeepMetadataOf(target)
      if (own) return { checkpoint: own.parentCheckpoint }
    }
    // Regenerating a user message's answer keeps that message; an edit or an answer replaced does not.
    history = messages.slice(0, trigger === 'regenerate-message' && target.role === 'user' ? at + 1 : at)
  }
  for (let index = history.length - 1; index >= 0; index--) {
    const found = sandkeepMetadataOf(history[index]!)
    if (found) return { checkpoint: found.checkpoint }
  }
  return trigger === 'regenerate-message' ? { regenerate: true } : undefined
}
