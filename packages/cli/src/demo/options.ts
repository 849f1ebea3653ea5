// The options and the result of `sandkeep demo`'s replay: the types every module of the demo reads, apart from
// run-demo.ts, which wires those modules together.
import type { E2BConnection, StoreConfig } from '../config.js'
import type { Transcript } from '../transcript.js'
import type { DemoRenderer, FaultName, Isolation, PauseMode, TurnSummary } from './events.js'

/** Options of `runDemo` (run-demo.ts). */
export interface RunDemoOptions {
  /** The validated transcript. */
  transcript: Transcript
  /** `local`: an in-process local-e2b host; `e2b`: the E2B platform in `e2b`. */
  provider:
    | { kind: 'local'; pauseMode: PauseMode; stateDir?: string; isolation?: Isolation }
    | { kind: 'e2b'; connection: E2BConnection }
  /** The session store. */
  store: StoreConfig
  /** The fault to inject and before which turn. Only with the local host. */
  fault: { name: FaultName; turn: number } | null
  /** Real wait for every scripted idle, ms. */
  idleMs: number
  /** Conversation id. */
  conversationId: string
  /** Tenant. */
  tenant: string
  /** Leave the session (and its paused sandbox) at the end instead of ending it. */
  keepSession: boolean
  /** Run the remaining turns after a failed one. */
  keepGoing: boolean
  /** Where events go. */
  renderer: DemoRenderer
  /** Stops the replay between (or inside) turns. */
  signal: AbortSignal
}

/** What the replay found. */
export interface DemoResult {
  /** True when every turn passed. */
  ok: boolean
  /** Per-turn summary. */
  turns: TurnSummary[]
}
