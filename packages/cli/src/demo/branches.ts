// The conversations of a replay that branches: each label's id and chat history, the rewind or fork a turn
// asks for before it runs, and the check that the turn then started from that checkpoint.
import type { SessionManager } from '@sandkeep/core'
import type { ModelMessage } from 'ai'
import { MAIN_CONVERSATION, type TranscriptTurn } from '../transcript.js'
import type { DemoEvent } from './events.js'
import type { RunDemoOptions } from './options.js'
import type { TurnOutcome } from './turn.js'

/** Checkpoints the replay keeps per conversation: enough for any shipped transcript to go back anywhere. */
export const DEMO_CHECKPOINTS = { every: 'turn', keep: 10 } as const

/** One conversation of the replay. */
interface Conversation {
  /** Its session's conversation id. */
  id: string
  /** The messages so far, which the next turn's prompt starts from. */
  messages: ModelMessage[]
  /** The messages at the end of each of its turns (index 0: before the first), for going back. */
  history: ModelMessage[][]
}

/** Where a transcript turn ended: its conversation's messages then, and the checkpoint it took. */
interface TurnEnd {
  history: ModelMessage[][]
  checkpointId: string | undefined
}

/**
 * The replay's conversations by label: `main` is `--conversation`, a fork `<main id>-<label>`. A rewind cuts
 * a conversation's messages back to the checkpoint's turn, as a chat UI drops the answers after it; a fork
 * starts a new one from its source's messages at that turn.
 */
export class Conversations {
  readonly #byLabel = new Map<string, Conversation>()
  /** By transcript turn index: for a switch back to that turn's answer, on whatever branch it is. */
  readonly #ends = new Map<number, TurnEnd>()
  readonly #mainId: string

  constructor(mainId: string) {
    this.#mainId = mainId
    this.#byLabel.set(MAIN_CONVERSATION, { id: mainId, messages: [], history: [[]] })
  }

  /** The conversation a turn runs on (a fork's exists once `branch` made it). */
  of(turn: TranscriptTurn): Conversation {
    const found = this.#byLabel.get(turn.conversation)
    if (!found) throw new Error(`the replay has no conversation "${turn.conversation}" yet`)
    return found
  }

  /** Every conversation id the replay used, main first: the sessions to end. */
  ids(): string[] {
    return [...this.#byLabel.values()].map((conversation) => conversation.id)
  }

  /**
   * Remembers the messages at the end of a turn, and the id of the checkpoint it took, for a later rewind,
   * switch or fork to go back to.
   */
  ended(turn: TranscriptTurn, checkpointId?: string): void {
    const conversation = this.of(turn)
    conversation.history[turn.chatTurn] = [...conversation.messages]
    conversation.history.length = turn.chatTurn + 1
    this.#ends.set(turn.index, {
      history: conversation.history.map((messages) => [...messages]),
      checkpointId,
    })
  }

  /**
   * Carries out the turn's branch, if any: `rewind` (regenerate, edit) or `fork` through the session manager,
   * then the chat history to match. Returns the `branch` event; the turn that follows restores the state.
   * @throws what the session manager throws (CHECKPOINT_NOT_FOUND, SESSION_EXISTS, ...)
   */
  async branch(
    turn: TranscriptTurn,
    sessions: SessionManager,
    options: RunDemoOptions,
  ): Promise<DemoEvent | undefined> {
    const { branch } = turn
    if (!branch) return undefined
    const { tenant } = options
    if (branch.kind === 'fork') {
      const source = this.#byLabel.get(branch.from)
      if (!source) throw new Error(`the replay has no conversation "${branch.from}" to fork`)
      const id = `${this.#mainId}-${turn.conversation}`
      const forked = await sessions.fork(source.id, id, { atTurn: branch.atTurn, tenant })
      const history = source.history.slice(0, branch.atTurn + 1).map((messages) => [...messages])
      this.#byLabel.set(turn.conversation, { id, messages: [...(history.at(-1) ?? [])], history })
      return {
        type: 'branch',
        turn: turn.index,
        kind: 'fork',
        conversationId: id,
        fromConversationId: source.id,
        checkpointTurn: forked.atTurn,
        source: forked.source,
      }
    }
    const conversation = this.of(turn)
    if (branch.kind === 'switch') {
      const end = this.#ends.get(branch.toAnswerOf)
      if (!end?.checkpointId) {
        throw new Error(`turn ${branch.toAnswerOf} took no checkpoint to switch back to`)
      }
      const restored = await sessions.restore(conversation.id, { checkpoint: end.checkpointId, tenant })
      conversation.history = end.history.map((messages) => [...messages])
      conversation.messages = [...(conversation.history[branch.toTurn] ?? [])]
      return {
        type: 'branch',
        turn: turn.index,
        kind: 'switch',
        conversationId: conversation.id,
        checkpointTurn: branch.toTurn,
        checkpointId: end.checkpointId,
        toAnswerOf: branch.toAnswerOf,
        source: restored.source,
        killedSandboxId: restored.killedSandboxId,
      }
    }
    const rewound = await sessions.rewind(conversation.id, { toTurn: branch.toTurn, tenant })
    conversation.history.length = branch.toTurn + 1
    conversation.messages = [...(conversation.history[branch.toTurn] ?? [])]
    return {
      type: 'branch',
      turn: turn.index,
      kind: branch.kind,
      conversationId: conversation.id,
      checkpointTurn: rewound.toTurn,
      source: rewound.source,
      droppedTurns: rewound.droppedTurns,
      killedSandboxId: rewound.killedSandboxId,
    }
  }
}

/**
 * Why a branched turn did not start from the checkpoint its branch went back to (its report says how its
 * sandbox was made), or undefined when it did, or when the turn never reached its sandbox.
 */
export function restoreProblem(turn: TranscriptTurn, outcome: TurnOutcome): string | undefined {
  const { branch } = turn
  const report = outcome.report
  if (!branch || !report) return undefined
  const expected = branch.kind === 'fork' ? 'forked' : 'rewound'
  // A switch, a regenerate and an edit restore a checkpoint of the same conversation: 'rewound'.
  const checkpointTurn = branch.kind === 'fork' ? branch.atTurn : branch.toTurn
  if (report.outcome !== expected || report.restored?.turn !== checkpointTurn) {
    return `expected the sandbox ${expected} from turn ${checkpointTurn}, got ${report.outcome}${report.restored ? ` from turn ${report.restored.turn}` : ''}`
  }
  return undefined
}
