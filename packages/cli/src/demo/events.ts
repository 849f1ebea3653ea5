import type { RestoreReport, ResumeReport, TurnEndReport } from '@sandkeep/core'

/** The fault names `--fault` accepts. */
export const FAULT_NAMES = [
  'expire-retention',
  'host-restart',
  'kill-server',
  'drop-memory',
  'connect-5xx',
  'id-change',
] as const

/** A fault the demo injects into the local host. */
export type FaultName = (typeof FAULT_NAMES)[number]

/** The pause fidelities of the local host. */
export const PAUSE_MODES = ['memory', 'filesystem', 'processes'] as const

/** A pause fidelity. */
export type PauseMode = (typeof PAUSE_MODES)[number]

/** How the embedded local host isolates sandboxes (`auto` needs bubblewrap and refuses to run without it). */
export const ISOLATIONS = ['auto', 'bubblewrap', 'none'] as const
export type Isolation = (typeof ISOLATIONS)[number]

/** Where the demo runs, as printed at its start. */
export interface DemoSetup {
  /** The transcript. */
  transcript: { file: string; title: string; turns: number }
  /** Conversation id used for the whole replay. */
  conversationId: string
  /** Tenant. */
  tenant: string
  /** The session store: `memory` (one process) or `redis` (URL without credentials). */
  store: { kind: 'memory' } | { kind: 'redis'; url: string; prefix: string }
  /** The sandbox platform. */
  provider:
    | { kind: 'local-e2b'; apiUrl: string; pauseMode: PauseMode; isolation: string }
    | { kind: 'e2b'; apiUrl: string }
  /** The injected fault and the turn it is injected before. */
  fault: { name: FaultName; turn: number } | null
  /** Real wait used for each scripted idle, ms. */
  idleMs: number
}

/** One timing row of the summary. */
export interface TurnSummary {
  /** 1-based turn number. */
  turn: number
  /** The label of the conversation it was a turn of (`main` unless a fork's). */
  conversation: string
  /** Its number within that conversation. */
  chatTurn: number
  /** What a rewind or fork before it restored; `null` for a turn that went on from the previous one. */
  restored: RestoreReport | null
  /** True when the turn passed. */
  ok: boolean
  /** How the sandbox was obtained; `null` when the turn never reached the sandbox. */
  outcome: ResumeReport['outcome'] | null
  /** What the turn end did with the sandbox. */
  action: TurnEndReport['action'] | null
  /** Seconds the sandbox ran for this turn (turn start to pause done). */
  runningSeconds: number
  /** Seconds the sandbox sat paused before this turn (measured). */
  pausedSeconds: number
  /** The idle the transcript scripted before this turn, seconds (what a real user would have taken). */
  scriptedIdleSeconds: number
  /** Repairs that ran (check names). */
  repairs: string[]
  /** Journal steps replayed. */
  rehydratedSteps: number
  /** True when the report said earlier state was lost. */
  stateLost: boolean
}

/** What the demo reports as it runs; `--json` prints each as one line. */
export type DemoEvent =
  | ({ type: 'demo-start' } & DemoSetup)
  | { type: 'idle'; turn: number; scriptedMs: number; waitedMs: number }
  | { type: 'fault'; turn: number; fault: FaultName; detail: string }
  | {
      type: 'turn-start'
      turn: number
      user: string
      /** The conversation it is a turn of, with its label (`main` unless a fork's). */
      conversationId?: string
      conversation?: string
      /** Its number within that conversation. */
      chatTurn?: number
    }
  | {
      /**
       * A restore before the turn: a rewind (the turn regenerates an answer or edits a message), a switch
       * back to an earlier answer on another branch, or a fork.
       */
      type: 'branch'
      turn: number
      kind: 'regenerate' | 'edit' | 'switch' | 'fork'
      /** The conversation the turn runs on: the rewound one, or the new fork. */
      conversationId: string
      /** For a fork: the conversation forked. */
      fromConversationId?: string
      /** The checkpoint's turn the next turn starts from. */
      checkpointTurn: number
      /** For a switch: the checkpoint's id, and the transcript turn whose answer it is. */
      checkpointId?: string
      toAnswerOf?: number
      /** How that turn will restore it. */
      source: 'snapshot' | 'journal'
      /** For a rewind: the turns whose checkpoints it dropped, and the sandbox it killed. */
      droppedTurns?: number[]
      killedSandboxId?: string | null
    }
  | { type: 'tool-call'; turn: number; toolCallId: string; toolName: string; input: unknown }
  | {
      type: 'tool-result'
      turn: number
      toolCallId: string
      toolName: string
      output: unknown
      /** False when the tool failed or its output missed the transcript's expectation. */
      ok: boolean
      /** Why `ok` is false. */
      problem?: string
    }
  | { type: 'text'; turn: number; text: string }
  | {
      type: 'turn-end'
      turn: number
      ok: boolean
      /** The resume report; `null` when the turn failed before its sandbox was ready. */
      report: ResumeReport | null
      /** What the end of the turn did. */
      end: TurnEndReport | null
      /** Repairs and rehydration that ran, from the session manager's events. */
      rehydrate: { steps: number; ms: number; reason: string } | null
      /** Why it failed. */
      error?: { code?: string; message: string }
      runningSeconds: number
      pausedSeconds: number
    }
  | {
      type: 'summary'
      ok: boolean
      turns: TurnSummary[]
      /** The first turn that failed (or was not reached because of an interruption). */
      failedTurn: number | null
      /** True when SIGINT/SIGTERM (or a closed output) stopped the replay; the session was still cleaned up. */
      interrupted: boolean
    }
  | { type: 'error'; message: string; code?: string }

/** Receives the demo's events (and progress, which only a TTY shows). */
export interface DemoRenderer {
  /** One event. */
  emit(event: DemoEvent): void
  /** Spinner text while waiting; `null` clears it. */
  progress(text: string | null): void
  /** Streams part of the model's final text as it arrives. */
  textDelta?(turn: number, delta: string): void
  /** Flushes and stops any spinner. */
  close(): void
}
