// The one owner of what this process knows of each thread's sandbox: the turn a run holds, the sandkeep
// checkpoint the sandbox's state equals, whether a tool changed it since, and the graph checkpoints waiting
// for their tie. Tools, the saver's root puts and the run-end hook all go through it, one call per thread at
// a time.
import { createSandboxSession, type SandboxSession } from '@sandkeep/agent'
import {
  type SandboxHandle,
  SandkeepError,
  type SessionManager,
  type Turn,
  type TurnJournal,
} from '@sandkeep/core'
import type { TieStore } from './ties.js'

/** Longest wait of a tool for the put of the graph checkpoint it runs from, ms (a guard, not a timing). */
const TIE_WAIT_MS = 60_000
/** Attempts of a restore that finds the session busy (a pause finishing). */
const RESTORE_ATTEMPTS = 40

interface ThreadState {
  /** The turn the current run holds, begun at its first tool call. */
  turn: Turn | undefined
  /** The @sandkeep/agent session over `turn`, the one the tools call. */
  session: SandboxSession | undefined
  /** The sandkeep checkpoint the sandbox's state equals; `null` = the root; `undefined` = unknown (read the head). */
  stateTie: string | null | undefined
  /** A tool used the sandbox since `stateTie` was taken. */
  dirty: boolean
  /** The graph checkpoint the latest tool calls ran from. */
  graph: string | undefined
  /** The latest root graph checkpoint put through this process. */
  lastPut: string | undefined
  /** Serializes this thread's calls. */
  chain: Promise<unknown>
  /** Calls queued or running on `chain`. */
  queued: number
}

interface TieWaiter {
  promise: Promise<void>
  resolve: () => void
}

/** What a tool asks for: the thread, and the root graph checkpoint its task runs from. */
export interface SandboxRequest {
  threadId: string
  /** `undefined` outside a graph run, or with `durability: 'exit'` (no checkpoint is put before the end). */
  checkpointId: string | undefined
}

/** The sandbox a tool call runs in, and the journal of its turn. */
export interface ThreadSandbox {
  sandbox: SandboxHandle
  journal: TurnJournal
  /**
   * The run's turn as a @sandkeep/agent sandbox session (what the tools call; its state notice is given once
   * per turn). The saver ends the turn when the run ends: do not call its `end()`.
   */
  session: SandboxSession
}

/** What a root put asks: the thread, the new checkpoint, its parent and the metadata's `source`. */
export interface RootPut {
  threadId: string
  checkpointId: string
  parentId: string | undefined
  source: unknown
}

export class ThreadSandboxes {
  readonly #sessions: SessionManager
  readonly #tenant: string
  readonly #ties: TieStore
  readonly #threads = new Map<string, ThreadState>()
  readonly #pendingPuts = new Set<string>()
  readonly #waiters = new Map<string, TieWaiter>()

  constructor(sessions: SessionManager, tenant: string, ties: TieStore) {
    this.#sessions = sessions
    this.#tenant = tenant
    this.#ties = ties
  }

  /**
   * The thread's sandbox as it was at the tool's graph checkpoint: waits for that checkpoint's tie, restores
   * the session to it when the sandbox holds another state (time travel, a fork, another branch), and begins
   * the run's turn at the first call.
   */
  async sandboxFor(request: SandboxRequest): Promise<ThreadSandbox> {
    const { threadId, checkpointId } = request
    const tie = checkpointId === undefined ? undefined : await this.#waitForTie(threadId, checkpointId)
    return this.#locked(threadId, async (state) => {
      const sameState =
        state.turn !== undefined &&
        (checkpointId === undefined ||
          checkpointId === state.graph ||
          tie === undefined ||
          (!state.dirty && tie === state.stateTie))
      if (!sameState) {
        if (state.turn) await this.#endTurn(state, false)
        const current = state.stateTie === undefined ? await this.#head(threadId) : state.stateTie
        if (tie !== undefined && tie !== current) await this.#restore(threadId, tie)
        state.stateTie = tie === undefined ? current : tie
        state.dirty = false
        state.turn = await this.#sessions.beginTurn(threadId, { tenant: this.#tenant })
        state.session = sessionOver(state.turn, this.#tenant)
      }
      state.dirty = true
      if (checkpointId !== undefined) state.graph = checkpointId
      const turn = state.turn as Turn
      return { sandbox: await turn.ready(), journal: turn.journal, session: state.session as SandboxSession }
    })
  }

  /** Marks a root put as under way (before the inner saver stores it), so tools wait for its tie. */
  putStarted(threadId: string, checkpointId: string): void {
    this.#pendingPuts.add(waitKey(threadId, checkpointId))
  }

  /** Ties a root checkpoint the inner saver stored, then lets the tools waiting for it go on. */
  async putStored(put: RootPut): Promise<void> {
    try {
      await this.#locked(put.threadId, async (state) => {
        const fromHere = put.source !== 'fork' && put.source !== 'update' && put.parentId === state.graph
        let tie: string | null
        if (state.turn && state.dirty && fromHere) {
          tie = (await state.turn.checkpoint()).id
          state.stateTie = tie
          state.dirty = false
        } else if (put.parentId !== undefined) {
          tie = await this.#inherited(put.threadId, put.parentId, state)
        } else {
          tie = state.stateTie === undefined ? await this.#head(put.threadId) : state.stateTie
        }
        await this.#ties.write(put.threadId, put.checkpointId, tie)
        if (fromHere || state.graph === undefined) state.graph = put.checkpointId
        state.lastPut = put.checkpointId
      })
    } finally {
      this.#settle(put.threadId, put.checkpointId)
    }
  }

  /** A root put failed: tools waiting for it go on from the sandbox's current state. */
  putFailed(threadId: string, checkpointId: string): void {
    this.#settle(threadId, checkpointId)
  }

  /**
   * Ends the run's turn (the sandbox pauses as the manager is configured). When no tool changed the sandbox
   * after the run's last checkpoint, that checkpoint is re-tied to the turn's end checkpoint, the session's
   * head, so the next run continues without a restore.
   */
  endRun(threadId: string): Promise<void> {
    return this.#locked(threadId, async (state) => {
      if (state.turn) await this.#endTurn(state, true)
      // Between runs the store knows the head, so an idle thread is forgotten (the next run reads the head).
      if (state.queued === 1 && !state.turn) this.#threads.delete(threadId)
    })
  }

  /** Ends the thread's turn (if any) and its session, and forgets the thread. */
  deleteThread(threadId: string): Promise<void> {
    return this.#locked(threadId, async (state) => {
      if (state.turn) await state.turn.end().catch(() => undefined)
      state.turn = undefined
      state.session = undefined
      await this.#sessions.endSession(threadId, { tenant: this.#tenant })
      this.#threads.delete(threadId)
      this.#ties.forget(threadId)
    })
  }

  /** Ends every open turn (for shutdown). */
  async endAll(): Promise<void> {
    await Promise.all([...this.#threads.keys()].map((threadId) => this.endRun(threadId)))
  }

  async #endTurn(state: ThreadState, retie: boolean): Promise<void> {
    const turn = state.turn as Turn
    const wasDirty = state.dirty
    const previousTie = state.stateTie
    state.turn = undefined
    state.session = undefined
    const report = await turn.end()
    const end = report.checkpoint
    state.stateTie = end ? end.id : undefined
    state.dirty = false
    if (!end || !retie || wasDirty || state.lastPut === undefined) return
    const lastTie = this.#ties.cached(turn.conversationId, state.lastPut)
    if (lastTie && lastTie.checkpoint === previousTie) {
      await this.#ties.write(turn.conversationId, state.lastPut, end.id, true)
    }
  }

  async #inherited(threadId: string, parentId: string, state: ThreadState): Promise<string | null> {
    const tie = await this.#ties.read(threadId, parentId)
    if (tie) return tie.checkpoint
    return state.stateTie === undefined ? this.#head(threadId) : state.stateTie
  }

  async #head(threadId: string): Promise<string | null> {
    return (await this.#sessions.listCheckpoints(threadId, { tenant: this.#tenant })).head
  }

  async #restore(threadId: string, checkpoint: string | null): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.#sessions.restore(threadId, { checkpoint, tenant: this.#tenant })
        return
      } catch (error) {
        const busy = SandkeepError.isInstance(error) && error.code === 'SESSION_BUSY'
        if (!busy || attempt >= RESTORE_ATTEMPTS) throw error
        await sleep(Math.min(error.retryAfterMs ?? 250, 2_000))
      }
    }
  }

  /** The tie of the graph checkpoint a tool runs from, once its put is stored (or it is known already). */
  async #waitForTie(threadId: string, checkpointId: string): Promise<string | null | undefined> {
    const wait = waitKey(threadId, checkpointId)
    const waiter = this.#waiter(wait)
    if (!this.#pendingPuts.has(wait)) {
      const known =
        this.#ties.cached(threadId, checkpointId) ?? (await this.#ties.read(threadId, checkpointId))
      if (known) {
        this.#dropWaiter(wait, waiter)
        return known.checkpoint
      }
    }
    let guard: NodeJS.Timeout | undefined
    await Promise.race([
      waiter.promise,
      new Promise<void>((resolve) => (guard = setTimeout(resolve, TIE_WAIT_MS))),
    ])
    clearTimeout(guard)
    this.#dropWaiter(wait, waiter)
    return this.#ties.cached(threadId, checkpointId)?.checkpoint
  }

  #waiter(wait: string): TieWaiter {
    let waiter = this.#waiters.get(wait)
    if (!waiter) {
      let resolve = () => {}
      const promise = new Promise<void>((done) => (resolve = done))
      waiter = { promise, resolve }
      this.#waiters.set(wait, waiter)
    }
    return waiter
  }

  #dropWaiter(wait: string, waiter: TieWaiter): void {
    if (this.#waiters.get(wait) === waiter) this.#waiters.delete(wait)
  }

  #settle(threadId: string, checkpointId: string): void {
    const wait = waitKey(threadId, checkpointId)
    this.#pendingPuts.delete(wait)
    this.#waiters.get(wait)?.resolve()
    this.#waiters.delete(wait)
  }

  #locked<T>(threadId: string, fn: (state: ThreadState) => Promise<T>): Promise<T> {
    let state = this.#threads.get(threadId)
    if (!state) {
      state = {
        turn: undefined,
        session: undefined,
        stateTie: undefined,
        dirty: false,
        graph: undefined,
        lastPut: undefined,
        chain: Promise.resolve(),
        queued: 0,
      }
      this.#threads.set(threadId, state)
    }
    const current = state
    current.queued += 1
    const run = current.chain
      .then(() => fn(current))
      .finally(() => {
        current.queued -= 1
      })
    current.chain = run.catch(() => undefined)
    return run
  }
}

/**
 * A @sandkeep/agent session over a turn this class began (under the thread's lock, after any restore). The
 * session's one use of a manager is `beginTurn` at its first call, so it is handed a source that gives it
 * that turn. The session is never ended: the turn is ended here, by the run's end or the next restore.
 */
function sessionOver(turn: Turn, tenant: string): SandboxSession {
  const source = { beginTurn: async () => turn } as unknown as SessionManager
  return createSandboxSession({ sessions: source, conversationId: turn.conversationId, tenant })
}

function waitKey(threadId: string, checkpointId: string): string {
  return `${threadId}\u0000${checkpointId}`
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
