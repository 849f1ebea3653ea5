// A checkpoint saver that wraps any other: every call goes through to the inner saver unchanged, and each
// root graph checkpoint is tied to the sandkeep checkpoint of the thread's sandbox (see ties.ts for where the
// tie is kept, thread-sandboxes.ts for when a checkpoint is taken and when the sandbox is restored).
import type { RunnableConfig } from '@langchain/core/runnables'
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
} from '@langchain/langgraph-checkpoint'
import { SandkeepError, type SessionManager } from '@sandkeep/core'
import { SandkeepRunEndHandler } from './run-end.js'
import { START_CHECKPOINT_KEY } from './run-keys.js'
import { type SandboxRequest, ThreadSandboxes } from './thread-sandboxes.js'
import { TieStore, withoutTies } from './ties.js'

/** Options of {@link SandkeepCheckpointSaver}. */
export interface SandkeepCheckpointSaverOptions {
  /** The saver that stores the graph's checkpoints (MemorySaver, SQLite, Postgres, Redis…). */
  saver: BaseCheckpointSaver
  /**
   * The session manager of the threads' sandboxes: thread id = conversation id. Needs the `checkpoints`
   * option (`{ every: 'turn' }`): each root graph checkpoint is tied to a sandkeep checkpoint.
   */
  sessions: SessionManager
  /** Tenant of every thread's session. Default `'default'`. */
  tenant?: string
}

/**
 * Wraps a LangGraph checkpoint saver so that a thread's sandbox follows its graph checkpoints: one run = one
 * sandkeep turn, a checkpoint where the graph checkpoints, and time travel (`invoke(null, pastConfig)`,
 * `updateState(pastConfig, …)`) restores the sandbox to that checkpoint before the next tool call.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export class SandkeepCheckpointSaver extends BaseCheckpointSaver {
  /** The wrapped saver. */
  readonly inner: BaseCheckpointSaver
  /** The session manager. */
  readonly sessions: SessionManager
  /** The tenant of the threads' sessions. */
  readonly tenant: string
  readonly #threads: ThreadSandboxes

  constructor(options: SandkeepCheckpointSaverOptions) {
    if (typeof options?.saver?.getTuple !== 'function' || typeof options.saver.put !== 'function') {
      throw invalid(
        'options.saver must be a LangGraph checkpoint saver (BaseCheckpointSaver), e.g. new MemorySaver().',
      )
    }
    if (typeof options.sessions?.beginTurn !== 'function') {
      throw invalid('options.sessions must be a sandkeep session manager (createSessionManager).')
    }
    if (options.tenant !== undefined && (typeof options.tenant !== 'string' || options.tenant === '')) {
      throw invalid('options.tenant must be a non-empty string when given.')
    }
    super(options.saver.serde)
    this.inner = options.saver
    this.sessions = options.sessions
    this.tenant = options.tenant ?? 'default'
    this.#threads = new ThreadSandboxes(this.sessions, this.tenant, new TieStore(this.inner))
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const tuple = await this.inner.getTuple(config)
    return tuple && withoutTies(tuple)
  }

  override async *list(
    config: RunnableConfig,
    options?: CheckpointListOptions,
  ): AsyncGenerator<CheckpointTuple> {
    for await (const tuple of this.inner.list(config, options)) yield withoutTies(tuple)
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const threadId = config.configurable?.thread_id
    const root = (config.configurable?.checkpoint_ns ?? '') === '' && typeof threadId === 'string'
    if (!root) return this.inner.put(config, checkpoint, metadata, newVersions)
    this.#threads.putStarted(threadId, checkpoint.id)
    let stored: RunnableConfig
    try {
      stored = await this.inner.put(config, checkpoint, metadata, newVersions)
    } catch (error) {
      this.#threads.putFailed(threadId, checkpoint.id)
      throw error
    }
    await this.#threads.putStored({
      threadId,
      checkpointId: checkpoint.id,
      parentId: config.configurable?.checkpoint_id as string | undefined,
      source: metadata?.source,
    })
    return stored
  }

  override putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath?: string,
  ): Promise<void> {
    return this.inner.putWrites(config, writes, taskId, taskPath)
  }

  override async deleteThread(threadId: string): Promise<void> {
    await this.inner.deleteThread(threadId)
    await this.#threads.deleteThread(threadId)
  }

  override getDeltaChannelHistory(options: Parameters<BaseCheckpointSaver['getDeltaChannelHistory']>[0]) {
    return this.inner.getDeltaChannelHistory(options)
  }

  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current)
  }

  /**
   * The thread's sandbox for a tool call, as it was at the graph checkpoint the call runs from (restored
   * first when the sandbox holds another state); begins the run's turn at the first call.
   */
  async sandboxFor(request: SandboxRequest & { startedFrom?: boolean }) {
    if (!request.startedFrom || request.checkpointId !== undefined) return this.#threads.sandboxFor(request)
    // Durability 'exit' and no checkpoint named: the run started from the thread's latest checkpoint, which
    // is still the latest (nothing is put before the run's end).
    const latest = await this.inner.getTuple({
      configurable: { thread_id: request.threadId, checkpoint_ns: '' },
    })
    return this.#threads.sandboxFor({ threadId: request.threadId, checkpointId: latest?.checkpoint.id })
  }

  /**
   * Ends the thread's current run: its turn ends and the sandbox pauses (as the manager is configured). The
   * run-end callback handler ({@link SandkeepCheckpointSaver.runConfig}) calls it; call it yourself where a
   * run is driven without that handler.
   */
  endRun(threadId: string): Promise<void> {
    return this.#threads.endRun(threadId)
  }

  /**
   * The config of one run of the thread: `configurable.thread_id` set, and the callback handler that ends
   * the run's turn when the run ends (normally, at an interrupt, on an error). Pass it to `invoke`/`stream`;
   * one per run. With `checkpoint_id` (time travel), the run starts from that checkpoint. Give `durability`
   * here (not beside the returned config) so the tools know it: with `'exit'` no step is checkpointed.
   * @throws SandkeepError INVALID_ARGUMENT for an empty thread id.
   */
  runConfig(threadId: string, config: RunnableConfig = {}): RunnableConfig {
    if (typeof threadId !== 'string' || threadId === '')
      throw invalid('runConfig needs a non-empty thread id.')
    const callbacks =
      Array.isArray(config.callbacks) || config.callbacks === undefined ? (config.callbacks ?? []) : undefined
    if (callbacks === undefined) throw invalid('runConfig: pass callbacks as an array of handlers to add to.')
    const durability = (config as { durability?: unknown }).durability
    return {
      ...config,
      // LangGraph reads the durability from here too, and the tools see it in their config (the top-level
      // option is not passed down to tasks): with 'exit' they must not wait for per-step puts.
      configurable: {
        ...config.configurable,
        thread_id: threadId,
        ...(durability === undefined ? {} : { __pregel_durability: durability }),
        // Tasks get `checkpoint_id` unset; with durability 'exit' the tools need the one the run starts from.
        ...(typeof config.configurable?.checkpoint_id === 'string'
          ? { [START_CHECKPOINT_KEY]: config.configurable.checkpoint_id }
          : {}),
      },
      callbacks: [...callbacks, new SandkeepRunEndHandler(this, threadId)],
    }
  }

  /** Ends every run this saver holds a turn for (for shutdown). */
  endAllRuns(): Promise<void> {
    return this.#threads.endAll()
  }
}

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message: `SandkeepCheckpointSaver: ${message}` })
}
