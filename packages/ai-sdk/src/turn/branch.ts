// A chat's branch point (regenerate the last answer, edit an earlier message, go on from a given turn)
// turned into the session manager's rewind to a turn number, done before the turn begins. The turn numbers
// are the session's: the record's `turnCount` counts the turns that ended.
import type { RewindResultReport, SessionManager } from '@sandkeep/core'
import { invalid } from '../errors.js'

/**
 * Where a {@link sandkeepTurn} starts from, in a chat's terms (`SandkeepTurnOptions.branch`). Each is a
 * `sessions.rewind` done before the turn begins; the conversation's checkpoints must be on
 * (`createSessionManager({ checkpoints: { every: 'turn' } })`).
 */
export type SandkeepTurnBranch =
  /** Answer the last user message again: start from the state before the conversation's last turn. */
  | { regenerate: true }
  /** The user edited the message of turn `editTurn` (1-based): start from the state before that turn. */
  | { editTurn: number }
  /**
   * Start from the state at the end of turn `fromTurn` (0: before the first turn). The conversation's
   * current turn count is its current state: nothing is rewound. What {@link branchFromMessages} returns.
   */
  | { fromTurn: number }

const MAX_TURN = 1_000_000_000
const BRANCH_KINDS = ['regenerate', 'editTurn', 'fromTurn'] as const

/**
 * Checks `SandkeepTurnOptions.branch` before any I/O.
 * @throws SandkeepError INVALID_ARGUMENT: not one of the three shapes, or a turn that cannot be one
 */
export function checkBranch(branch: unknown): SandkeepTurnBranch | undefined {
  if (branch === undefined) return undefined
  const shapes = '{ regenerate: true }, { editTurn: n } (n >= 1) or { fromTurn: n } (n >= 0)'
  if (typeof branch !== 'object' || branch === null) {
    throw invalid(`sandkeepTurn: branch must be one of ${shapes}, got ${String(branch)}.`)
  }
  const keys = Object.keys(branch)
  const kind = keys[0]
  if (keys.length !== 1 || !BRANCH_KINDS.includes(kind as (typeof BRANCH_KINDS)[number])) {
    throw invalid(`sandkeepTurn: branch must be one of ${shapes}, got keys ${keys.join(', ') || 'none'}.`)
  }
  const value = (branch as Record<string, unknown>)[kind!]
  if (kind === 'regenerate') {
    if (value !== true) throw invalid(`sandkeepTurn: branch.regenerate must be true, got ${String(value)}.`)
    return { regenerate: true }
  }
  const min = kind === 'editTurn' ? 1 : 0
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_TURN) {
    const why = kind === 'editTurn' ? ' (turns are numbered from 1; to start over, use { fromTurn: 0 })' : ''
    throw invalid(`sandkeepTurn: branch.${kind} must be an integer from ${min}${why}, got ${String(value)}.`)
  }
  return kind === 'editTurn' ? { editTurn: value } : { fromTurn: value }
}

/** Where the branch takes the session, given its turn count; `undefined` when it already is there. */
function rewindTarget(branch: SandkeepTurnBranch, turnCount: number): number | undefined {
  const past = (what: string) =>
    invalid(
      `sandkeepTurn: ${what}, but the conversation has ${turnCount} turn(s) so far. Nothing was rewound.`,
    )
  if ('regenerate' in branch) {
    if (turnCount === 0) throw past('branch { regenerate: true } needs a turn to answer again')
    return turnCount - 1
  }
  if ('editTurn' in branch) {
    if (branch.editTurn > turnCount) throw past(`branch { editTurn: ${branch.editTurn} } names no turn`)
    return branch.editTurn - 1
  }
  // A later turn than the last is the manager's to refuse (CHECKPOINT_NOT_FOUND, with the kept turns).
  return branch.fromTurn === turnCount ? undefined : branch.fromTurn
}

/**
 * Rewinds the conversation to where `branch` says, reading its turn count first. A turn ending meanwhile
 * (another process's) moves the count after the read: the rewind is to the turn computed from the read.
 * @throws SandkeepError INVALID_ARGUMENT (no such turn to regenerate or edit), and `rewind`'s errors
 *   (CHECKPOINT_NOT_FOUND, SESSION_BUSY), all before any change.
 */
export async function rewindForBranch(
  sessions: SessionManager,
  conversationId: string,
  tenant: string,
  branch: SandkeepTurnBranch,
  abortSignal: AbortSignal | undefined,
): Promise<RewindResultReport | undefined> {
  const record = await sessions.getSession(conversationId, { tenant })
  const toTurn = rewindTarget(branch, record?.turnCount ?? 0)
  if (toTurn === undefined) return undefined
  return sessions.rewind(conversationId, {
    toTurn,
    tenant,
    ...(abortSignal === undefined ? {} : { abortSignal }),
  })
}
