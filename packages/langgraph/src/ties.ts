// The tie between a root graph checkpoint and the sandkeep checkpoint whose sandbox state it goes with,
// persisted beside the inner saver's own data: as a pending write of a reserved channel on that graph
// checkpoint. The wrapper filters these writes out of every tuple it returns, so metadata, checkpoints and
// the graph's own writes come back exactly as stored, and `deleteThread` removes the ties with the thread.
import type { RunnableConfig } from '@langchain/core/runnables'
import type {
  BaseCheckpointSaver,
  CheckpointPendingWrite,
  CheckpointTuple,
} from '@langchain/langgraph-checkpoint'

/** The reserved channel a tie is written on. */
export const TIE_CHANNEL = '__sandkeep_tie__'

/** A tie: the sandkeep checkpoint id (`null` = the session's root, before its first turn) and its version. */
export interface Tie {
  checkpoint: string | null
  /** Later ties of the same graph checkpoint (a turn end re-ties the last one) have a higher `seq`. */
  seq: number
}

/** Most parents walked to find an inherited tie (a graph checkpoint written without one). */
const MAX_ANCESTORS = 1000
/** Most ties cached; past it the oldest are dropped (and read again from the inner saver when needed). */
const MAX_CACHED = 10_000

/** True for a pending write that is a tie (the wrapper's own), false for the graph's writes. */
export function isTieWrite(write: CheckpointPendingWrite): boolean {
  return write[1] === TIE_CHANNEL
}

/** The tuple without the wrapper's tie writes (a new object; the inner saver's is not changed). */
export function withoutTies(tuple: CheckpointTuple): CheckpointTuple {
  if (!tuple.pendingWrites?.some(isTieWrite)) return tuple
  return { ...tuple, pendingWrites: tuple.pendingWrites.filter((write) => !isTieWrite(write)) }
}

/** The newest tie among a tuple's writes, if any. */
export function tieOf(tuple: CheckpointTuple): Tie | undefined {
  let newest: Tie | undefined
  for (const write of tuple.pendingWrites ?? []) {
    if (!isTieWrite(write)) continue
    const value = write[2] as Partial<Tie> | undefined
    if (typeof value?.seq !== 'number' || (typeof value.checkpoint !== 'string' && value.checkpoint !== null))
      continue
    if (!newest || value.seq > newest.seq) newest = { checkpoint: value.checkpoint, seq: value.seq }
  }
  return newest
}

/** The config of a root graph checkpoint of a thread. */
export function rootConfig(threadId: string, checkpointId: string): RunnableConfig {
  return { configurable: { thread_id: threadId, checkpoint_ns: '', checkpoint_id: checkpointId } }
}

/**
 * Reads and writes ties through the inner saver, with a cache of those this process saw. The one owner of
 * that cache.
 */
export class TieStore {
  readonly #inner: BaseCheckpointSaver
  readonly #cache = new Map<string, Tie>()

  constructor(inner: BaseCheckpointSaver) {
    this.#inner = inner
  }

  /**
   * Writes the tie of a root graph checkpoint (the checkpoint must be stored already). `retie`: the
   * checkpoint may have a tie already (its version is read when it is not cached).
   */
  async write(
    threadId: string,
    checkpointId: string,
    checkpoint: string | null,
    retie = false,
  ): Promise<Tie> {
    let previous = this.#cache.get(key(threadId, checkpointId))
    if (!previous && retie) {
      const tuple = await this.#inner.getTuple(rootConfig(threadId, checkpointId))
      previous = tuple && tieOf(tuple)
    }
    const tie: Tie = { checkpoint, seq: (previous?.seq ?? 0) + 1 }
    // A task id per version: savers keep the first write of a (task, index) pair and ignore repeats.
    await this.#inner.putWrites(
      rootConfig(threadId, checkpointId),
      [[TIE_CHANNEL, tie]],
      `sandkeep-tie-${tie.seq}`,
      '',
    )
    this.#set(key(threadId, checkpointId), tie)
    return tie
  }

  /** Notes a tie read from a tuple, so a later re-tie gets a higher version. */
  remember(threadId: string, checkpointId: string, tie: Tie): void {
    const known = this.#cache.get(key(threadId, checkpointId))
    if (!known || known.seq < tie.seq) this.#set(key(threadId, checkpointId), tie)
  }

  #set(cacheKey: string, tie: Tie): void {
    this.#cache.delete(cacheKey)
    this.#cache.set(cacheKey, tie)
    for (const oldest of this.#cache.keys()) {
      if (this.#cache.size <= MAX_CACHED) break
      this.#cache.delete(oldest)
    }
  }

  /** The cached tie, without a read. */
  cached(threadId: string, checkpointId: string): Tie | undefined {
    return this.#cache.get(key(threadId, checkpointId))
  }

  /**
   * The tie of a root graph checkpoint: its own, else its nearest tied ancestor's (a checkpoint written
   * without one changed nothing in the sandbox as far as the wrapper knows); `undefined` when none is tied
   * (a thread that ran before the wrapper) or the checkpoint is unknown.
   */
  async read(threadId: string, checkpointId: string): Promise<Tie | undefined> {
    let id: string | undefined = checkpointId
    for (let walked = 0; id !== undefined && walked < MAX_ANCESTORS; walked += 1) {
      const cached = this.#cache.get(key(threadId, id))
      if (cached) return cached
      const tuple = await this.#inner.getTuple(rootConfig(threadId, id))
      if (!tuple) return undefined
      const tie = tieOf(tuple)
      if (tie) {
        this.remember(threadId, id, tie)
        return tie
      }
      id = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined
    }
    return undefined
  }

  /** Forgets a thread's cached ties (after `deleteThread`). */
  forget(threadId: string): void {
    for (const cacheKey of this.#cache.keys())
      if (cacheKey.startsWith(`${threadId}\u0000`)) this.#cache.delete(cacheKey)
  }
}

function key(threadId: string, checkpointId: string): string {
  return `${threadId}\u0000${checkpointId}`
}
