// A chat's branch point turned into a move of the conversation's head in its checkpoint tree, done before
// the turn begins: a restore to a checkpoint id (what the messages' metadata carries), or one of the older
// conveniences (regenerate, edit turn k, from turn n), which name checkpoints on the head's path. Nothing
// is deleted: every other branch stays restorable.
import {
  type Checkpoint,
  type RestoreResult,
  type RewindResultReport,
  SandkeepError,
  type SessionManager,
} from '@sandkeep/core'
import { invalid } from '../errors.js'

/**
 * Where a {@link sandkeepTurn} starts from, in a chat's terms (`SandkeepTurnOptions.branch`). The
 * conversation's checkpoints must be on (`createSessionManager({ checkpoints: { every: 'turn' } })`).
 */
export type SandkeepTurnBranch =
  /**
   * Start from this checkpoint (an id from an answer's metadata, {@link branchFromMessages}), on any
   * branch of the conversation; `null`: from the root, before the first turn. The head: nothing to do.
   */
  | { checkpoint: string | null }
  /** Answer the last answer's message again: start from the checkpoint the head's turn started from. */
  | { regenerate: true }
  /** The user edited the message of turn `editTurn` (1-based) on the head's path: start from before it. */
  | { editTurn: number }
  /** Start from the end of turn `fromTurn` on the head's path (0: the root); the head's own: nothing to do. */
  | { fromTurn: number }

const MAX_TURN = 1_000_000_000
/** The longest checkpoint id taken (store ids are far shorter). */
export const CHECKPOINT_ID_MAX = 256
const BRANCH_KINDS = ['checkpoint', 'regenerate', 'editTurn', 'fromTurn'] as const

/** Why `id` cannot be a checkpoint id, or `undefined` when it can. */
export function checkCheckpointId(id: unknown): string | undefined {
  if (typeof id !== 'string') return `a checkpoint id is a string, got ${id === null ? 'null' : typeof id}`
  if (id.length === 0 || id.length > CHECKPOINT_ID_MAX) {
    return `a checkpoint id has 1 to ${CHECKPOINT_ID_MAX} characters, got ${id.length}`
  }
  if (!/^[A-Za-z0-9_.:-]+$/.test(id)) return 'a checkpoint id has letters, digits and _ . : - only'
  return undefined
}

/**
 * Checks `SandkeepTurnOptions.branch` before any I/O; `who` names the caller in the messages (an adapter's
 * own function; default `sandkeepTurn`, the AI SDK adapter's).
 * @throws SandkeepError INVALID_ARGUMENT: not one of the shapes, a malformed checkpoint id, or a turn that
 *   cannot be one
 */
export function checkBranch(branch: unknown, who = 'sandkeepTurn'): SandkeepTurnBranch | undefined {
  if (branch === undefined) return undefined
  const shapes =
    '{ checkpoint: id | null }, { regenerate: true }, { editTurn: n } (n >= 1) or { fromTurn: n } (n >= 0)'
  if (typeof branch !== 'object' || branch === null) {
    throw invalid(`${who}: branch must be one of ${shapes}, got ${String(branch)}.`)
  }
  const keys = Object.keys(branch)
  const kind = keys[0]
  if (keys.length !== 1 || !BRANCH_KINDS.includes(kind as (typeof BRANCH_KINDS)[number])) {
    throw invalid(`${who}: branch must be one of ${shapes}, got keys ${keys.join(', ') || 'none'}.`)
  }
  const value = (branch as Record<string, unknown>)[kind!]
  if (kind === 'checkpoint') {
    const why = value === null ? undefined : checkCheckpointId(value)
    if (why) throw invalid(`${who}: branch.checkpoint must be a checkpoint id or null: ${why}.`)
    return { checkpoint: value as string | null }
  }
  if (kind === 'regenerate') {
    if (value !== true) throw invalid(`${who}: branch.regenerate must be true, got ${String(value)}.`)
    return { regenerate: true }
  }
  const min = kind === 'editTurn' ? 1 : 0
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_TURN) {
    const why =
      kind === 'editTurn' ? ' (turns are numbered from 1; to start over, use { checkpoint: null })' : ''
    throw invalid(`${who}: branch.${kind} must be an integer from ${min}${why}, got ${String(value)}.`)
  }
  return kind === 'editTurn' ? { editTurn: value } : { fromTurn: value }
}

/** What a branch did before the turn: a restore (to an id, or a regenerate) or a rewind on the head's path. */
export type BranchMove = RestoreResult | RewindResultReport

/**
 * Moves the conversation's head where `branch` says, reading its checkpoint tree first; `undefined` when
 * the head already is there. A turn of another process ending between the read and the move moves the
 * head meanwhile: the move is to the checkpoint computed from the read.
 * @throws SandkeepError INVALID_ARGUMENT (no answer to regenerate, no turn to edit), CHECKPOINT_NOT_FOUND
 *   (an id the conversation does not have: pruned, another conversation's or tenant's, altered), and the
 *   restore's errors (SESSION_BUSY), all before any change; `who` names the caller, as for {@link checkBranch}.
 */
export async function moveForBranch(
  sessions: SessionManager,
  conversationId: string,
  tenant: string,
  branch: SandkeepTurnBranch,
  abortSignal: AbortSignal | undefined,
  who = 'sandkeepTurn',
): Promise<BranchMove | undefined> {
  const signal = abortSignal === undefined ? {} : { abortSignal }
  const tree = await sessions.listCheckpoints(conversationId, { tenant })
  const head: Checkpoint | undefined =
    tree.head === null ? undefined : tree.checkpoints.find((checkpoint) => checkpoint.id === tree.head)
  const depth = head?.turn ?? 0
  const restore = async (checkpoint: string | null) => {
    if (checkpoint === tree.head) return undefined
    try {
      return await sessions.restore(conversationId, { checkpoint, tenant, ...signal })
    } catch (error) {
      if (!SandkeepError.hasCode(error, 'CHECKPOINT_NOT_FOUND')) throw error
      throw new SandkeepError({
        code: 'CHECKPOINT_NOT_FOUND',
        message: `${who}: ${error.message}${/Nothing was changed/.test(error.message) ? '' : ' Nothing was changed.'} In a chat: the message that named it was altered, or copied from another conversation (a fork's copies drop their sandkeep metadata), or its checkpoint was pruned; send the history as the server streamed it, or no sandkeep metadata to go on from the conversation's current state.`,
        cause: error,
      })
    }
  }
  const past = (what: string) =>
    invalid(
      `${who}: ${what}, but the conversation's current branch has ${depth} turn(s). Nothing was changed.`,
    )
  if ('checkpoint' in branch) return restore(branch.checkpoint)
  if ('regenerate' in branch) {
    if (!head) throw past('branch { regenerate: true } needs a turn to answer again')
    return restore(head.parentId)
  }
  const toTurn = 'editTurn' in branch ? branch.editTurn - 1 : branch.fromTurn
  if ('editTurn' in branch && branch.editTurn > depth) {
    throw past(`branch { editTurn: ${branch.editTurn} } names no turn`)
  }
  if (toTurn === depth) return undefined
  // A later turn than the head's is the manager's to refuse (CHECKPOINT_NOT_FOUND, with the kept turns).
  return sessions.rewind(conversationId, { toTurn, tenant, ...signal })
}
