// The hook that ends a run's turn: a callback handler on the graph's run. LangGraph reports the end of the
// outermost run to it on every way out (a normal end, an interrupt, an error), so the turn ends and the
// sandbox pauses on each, and the next run (or the resume of the interrupt) finds it.
import { BaseCallbackHandler } from '@langchain/core/callbacks/base'

/** What the handler ends. */
export interface RunEnder {
  endRun(threadId: string): Promise<void>
}

/** Ends the thread's turn when the run it is attached to ends. One handler per run. */
export class SandkeepRunEndHandler extends BaseCallbackHandler {
  override name = 'sandkeep-run-end'
  // The run's invoke/stream resolves only after the turn ended (the sandbox paused), not before.
  override awaitHandlers = true
  readonly #ender: RunEnder
  readonly #threadId: string
  #rootRunId: string | undefined

  constructor(ender: RunEnder, threadId: string) {
    super()
    this.#ender = ender
    this.#threadId = threadId
  }

  override handleChainStart(_chain: unknown, _inputs: unknown, runId: string): void {
    // The first run this handler sees is the graph's own; the nodes' runs start after it.
    this.#rootRunId ??= runId
  }

  override async handleChainEnd(_outputs: unknown, runId: string): Promise<void> {
    if (runId === this.#rootRunId) await this.#end()
  }

  override async handleChainError(_error: unknown, runId: string): Promise<void> {
    if (runId === this.#rootRunId) await this.#end()
  }

  async #end(): Promise<void> {
    this.#rootRunId = undefined
    await this.#ender.endRun(this.#threadId)
  }
}
