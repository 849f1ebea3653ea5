// A transcript's branches resolved against the turns before them: which conversation each turn is on, its
// number there, and the checkpoint its regenerate, edit or fork goes back to. Found wrong before a replay.
import { TranscriptError } from './transcript-problems.js'
import { MAIN_CONVERSATION, type TranscriptBranch, type TranscriptBranchInput } from './transcript-schema.js'

/** A turn as the schema gives it, the fields this module reads. */
interface BranchedTurnInput {
  conversation?: string | undefined
  branch?: TranscriptBranchInput | undefined
}

/** Where a turn is, once the branches before it are applied. */
export interface ResolvedPlace {
  /** The conversation's label. */
  conversation: string
  /** The turn's number within it (1-based). */
  chatTurn: number
  /** The rewind or fork before it. */
  branch?: TranscriptBranch
}

/**
 * Plays the turns' branches on the conversations' turn counts: a regenerate goes back one turn, an edit of
 * turn n to turn n - 1, a fork copies its source's first `atTurn` turns (default all) into a new label.
 * @throws TranscriptError naming the turn and the field of every branch that cannot be carried out
 */
export function resolveBranches(label: string, turns: readonly BranchedTurnInput[]): ResolvedPlace[] {
  const counts = new Map<string, number>([[MAIN_CONVERSATION, 0]])
  const problems: string[] = []
  const places: ResolvedPlace[] = []
  for (const [index, turn] of turns.entries()) {
    const conversation = turn.conversation ?? MAIN_CONVERSATION
    const problem = (field: string, message: string) =>
      problems.push(`${label}: turn ${index + 1}, field ${field}: ${message}`)
    const resolved =
      turn.branch?.kind === 'switch'
        ? resolveSwitch(conversation, turn.branch.toAnswerOf, index, places, problem)
        : resolveOne(conversation, turn.branch, counts, problem)
    if (resolved === undefined) {
      places.push({ conversation, chatTurn: (counts.get(conversation) ?? 0) + 1 })
      continue
    }
    counts.set(conversation, resolved.before + 1)
    places.push({
      conversation,
      chatTurn: resolved.before + 1,
      ...(resolved.branch ? { branch: resolved.branch } : {}),
    })
  }
  if (problems.length > 0) throw new TranscriptError(label, problems)
  return places
}

/** The conversation's turn count before this turn and the branch resolved; undefined after a problem. */
function resolveOne(
  conversation: string,
  branch: TranscriptBranchInput | undefined,
  counts: Map<string, number>,
  problem: (field: string, message: string) => void,
): { before: number; branch?: TranscriptBranch } | undefined {
  const count = counts.get(conversation)
  if (!branch) {
    if (count === undefined) {
      problem(
        'conversation',
        `"${conversation}" has no turns yet: its first turn must fork it ({"kind": "fork", "from": "${MAIN_CONVERSATION}"})`,
      )
      return undefined
    }
    return { before: count }
  }
  if (branch.kind === 'fork') return resolveFork(conversation, branch, counts, problem)
  if (branch.kind === 'switch') return undefined // resolved by resolveSwitch, against the turns' places
  if (count === undefined) {
    problem('conversation', `"${conversation}" has no turns yet: only a fork can start it`)
    return undefined
  }
  if (branch.kind === 'regenerate') {
    if (count === 0) {
      problem('branch.kind', `"regenerate" needs an earlier answer in "${conversation}" to regenerate`)
      return undefined
    }
    return { before: count - 1, branch: { kind: 'regenerate', toTurn: count - 1 } }
  }
  if (branch.turn > count) {
    problem('branch.turn', `"${conversation}" has ${count} turn(s) before this one; edit one of them`)
    return undefined
  }
  return { before: branch.turn - 1, branch: { kind: 'edit', toTurn: branch.turn - 1 } }
}

/** A switch back to the answer of transcript turn `toAnswerOf`: an earlier turn of the same conversation. */
function resolveSwitch(
  conversation: string,
  toAnswerOf: number,
  index: number,
  places: readonly ResolvedPlace[],
  problem: (field: string, message: string) => void,
): { before: number; branch: TranscriptBranch } | undefined {
  const target = places[toAnswerOf - 1]
  if (toAnswerOf > index || !target) {
    problem('branch.toAnswerOf', `name an earlier turn of the transcript (1 to ${index}), got ${toAnswerOf}`)
    return undefined
  }
  if (target.conversation !== conversation) {
    problem(
      'branch.toAnswerOf',
      `turn ${toAnswerOf} is a turn of "${target.conversation}", not of "${conversation}": fork to go to another conversation`,
    )
    return undefined
  }
  return { before: target.chatTurn, branch: { kind: 'switch', toAnswerOf, toTurn: target.chatTurn } }
}

function resolveFork(
  conversation: string,
  branch: Extract<TranscriptBranchInput, { kind: 'fork' }>,
  counts: Map<string, number>,
  problem: (field: string, message: string) => void,
): { before: number; branch: TranscriptBranch } | undefined {
  const from = branch.from ?? MAIN_CONVERSATION
  const sourceCount = counts.get(from)
  if (counts.has(conversation)) {
    problem(
      'conversation',
      `"${conversation}" already exists: a fork starts a new conversation (name it in "conversation")`,
    )
    return undefined
  }
  if (sourceCount === undefined) {
    problem('branch.from', `no conversation "${from}" before this turn`)
    return undefined
  }
  const atTurn = branch.atTurn ?? sourceCount
  if (atTurn > sourceCount) {
    problem('branch.atTurn', `"${from}" has ${sourceCount} turn(s) before this one`)
    return undefined
  }
  return { before: atTurn, branch: { kind: 'fork', from, atTurn } }
}
