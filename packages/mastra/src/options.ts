import type { MastraSandboxOptions } from '@mastra/core/workspace'
import type { SessionManager } from '@sandkeep/core'

/** Options of {@link SandkeepMastraSandbox}. */
export interface SandkeepMastraSandboxOptions
  extends Pick<MastraSandboxOptions, 'onStart' | 'onStop' | 'onDestroy' | 'env' | 'workingDirectory'> {
  /** The session manager that keeps the thread's sandbox (its `onTurnEnd` decides what `stop()` does). */
  sessions: SessionManager
  /** The Mastra thread id: the sandkeep conversation id. INVALID_ARGUMENT when empty or too long. */
  threadId: string
  /** Tenant of the thread's session; default `'default'`. INVALID_ARGUMENT when not a valid tenant. */
  tenant?: string
  /**
   * Whether the manager was made with `checkpoints` (so `snapshot()` takes a real checkpoint, and Mastra may
   * seed clones from it). Default true; set false for a manager without checkpoints, where `snapshot()`
   * does nothing.
   */
  checkpoints?: boolean
  /**
   * Put the state-lost notice in front of the output of the first command of a turn that lost state, so
   * the model reads it in the tool result. Default true. The notice is also `sandbox.notice`.
   */
  announceStateLoss?: boolean
  /**
   * For a clone: the thread (of the same tenant) its session is forked from on its first `start()`, and the
   * checkpoint id to fork at (default the source's head). Set by `clone()` and `cloneThread`.
   */
  forkFrom?: { threadId: string; checkpoint?: string | null }
}
