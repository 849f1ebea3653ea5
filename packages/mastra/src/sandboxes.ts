import type { MastraMemory } from '@mastra/core/memory'
import type { RequestContext } from '@mastra/core/request-context'
import type { WorkspaceSandboxCacheKey, WorkspaceSandboxResolver } from '@mastra/core/workspace'
import {
  type ForkResult,
  SandkeepError,
  type SessionManager,
  validateSessionKey,
  validateTenant,
} from '@sandkeep/core'
import type { SandkeepMastraSandboxOptions } from './options.js'
import { SandkeepMastraSandbox } from './sandbox.js'

// The keys Mastra reads a run's thread and resource from (MASTRA_THREAD_ID_KEY, MASTRA_RESOURCE_ID_KEY in
// @mastra/core/request-context; the server middleware sets them), and the one an agent with memory sets.
const THREAD_ID_KEY = 'mastra__threadId'
const RESOURCE_ID_KEY = 'mastra__resourceId'
const MEMORY_KEY = 'MastraMemory'

/** The thread and resource of a Mastra request. */
export interface ThreadContext {
  threadId: string
  resourceId: string | undefined
  requestContext: RequestContext
}

/** Options of {@link createSandkeepSandboxes}. */
export interface SandkeepSandboxesOptions
  extends Omit<SandkeepMastraSandboxOptions, 'threadId' | 'tenant' | 'forkFrom'> {
  /**
   * The tenant of every thread's session: a fixed tenant, or a function of the request (return the resource
   * id for a tenant per user or organisation). Default `'default'`. A value that is not a valid tenant
   * (1 to 64 of A-Z a-z 0-9 . _ -) is INVALID_ARGUMENT before any I/O.
   */
  tenant?: string | ((context: ThreadContext) => string)
}

/** What {@link createSandkeepSandboxes} returns: the Workspace's two options and the threads' sandboxes. */
export interface SandkeepSandboxes {
  /** `new Workspace({ sandbox })`: the thread's sandbox for a request. INVALID_ARGUMENT without a thread id. */
  readonly sandbox: WorkspaceSandboxResolver
  /** `new Workspace({ sandboxCacheKey })`: one sandbox per tenant and thread. */
  readonly sandboxCacheKey: WorkspaceSandboxCacheKey
  /** The sandbox of a thread (the same object the Workspace resolves for it). */
  forThread(threadId: string, options?: { tenant?: string }): SandkeepMastraSandbox
  /** Ends the thread's turn when its sandbox is started (pauses it by the manager's policy). */
  endTurn(threadId: string, options?: { tenant?: string }): Promise<void>
  /** Runs `fn` (an `agent.generate` / `agent.stream` to its end) and ends the thread's turn after it, even when it throws. */
  withTurn<T>(threadId: string, fn: () => Promise<T>, options?: { tenant?: string }): Promise<T>
  /**
   * Ends the thread's session: its turn if started, then the sandbox is killed and the journal and
   * checkpoints are dropped (`sessions.endSession`). Returns false when the thread had no session.
   */
  endSession(threadId: string, options?: { tenant?: string }): Promise<boolean>
  /** Ends the turns of every started sandbox (for a shutdown). */
  endAllTurns(): Promise<void>
  /**
   * Clones a Mastra thread and its sandbox: `memory.cloneThread` copies the messages, then the sandkeep
   * session is forked (at `checkpoint`, default the source's head) so the new thread starts from the
   * source's files and journal and goes on with its own sandbox. `fork` is null when the source had no
   * session yet (nothing to copy).
   */
  cloneThread(
    memory: Pick<MastraMemory, 'cloneThread'>,
    input: Parameters<MastraMemory['cloneThread']>[0] & { tenant?: string; checkpoint?: string | null },
  ): Promise<Awaited<ReturnType<MastraMemory['cloneThread']>> & { fork: ForkResult | null }>
}

/** Reads the thread and resource ids of a Mastra request: the reserved keys first, then the agent's memory. */
export function threadOf(requestContext: RequestContext | undefined): ThreadContext {
  const memory = requestContext?.get(MEMORY_KEY) as
    | { thread?: { id?: unknown }; resourceId?: unknown }
    | undefined
  const threadId = requestContext?.get(THREAD_ID_KEY) ?? memory?.thread?.id
  const resourceId = requestContext?.get(RESOURCE_ID_KEY) ?? memory?.resourceId
  if (typeof threadId !== 'string' || threadId.length === 0) {
    throw new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message:
        'No thread id in the Mastra request context: run the agent with memory ({ memory: { thread, resource } }) ' +
        `or set ${THREAD_ID_KEY} in the requestContext, so the sandbox belongs to one thread.`,
    })
  }
  return {
    threadId,
    resourceId: typeof resourceId === 'string' ? resourceId : undefined,
    requestContext: requestContext as RequestContext,
  }
}

/**
 * One sandkeep-kept sandbox per Mastra thread, for a Workspace:
 * `new Workspace({ sandbox: sandboxes.sandbox, sandboxCacheKey: sandboxes.sandboxCacheKey })`.
 * Synchronous, no I/O: each thread's sandbox begins its turn when a tool first uses it; end the turn with
 * `sandboxes.endTurn(threadId)` after the agent's reply (that is when the sandbox is paused).
 */
export function createSandkeepSandboxes(options: SandkeepSandboxesOptions): SandkeepSandboxes {
  if (!options?.sessions || typeof options.sessions.beginTurn !== 'function') {
    throw new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message: 'createSandkeepSandboxes needs `sessions`: a session manager from createSessionManager().',
    })
  }
  if (typeof options.tenant === 'string') validateTenant(options.tenant)
  const { tenant, ...sandboxOptions } = options
  const sessions: SessionManager = options.sessions
  const cache = new Map<string, SandkeepMastraSandbox>()
  const keyOf = (threadId: string, tenantId: string | undefined) => {
    const key = validateSessionKey(threadId, tenantId)
    return { ...key, cacheKey: `${key.tenant}\u0000${key.conversationId}` }
  }
  const tenantOf = (context: ThreadContext) => (typeof tenant === 'function' ? tenant(context) : tenant)

  const forThread = (threadId: string, threadOptions: { tenant?: string } = {}) => {
    const key = keyOf(threadId, threadOptions.tenant ?? (typeof tenant === 'string' ? tenant : undefined))
    let sandbox = cache.get(key.cacheKey)
    if (sandbox === undefined) {
      sandbox = new SandkeepMastraSandbox({
        ...sandboxOptions,
        threadId: key.conversationId,
        tenant: key.tenant,
      })
      cache.set(key.cacheKey, sandbox)
    }
    return sandbox
  }
  const fromRequest = (requestContext: RequestContext) => {
    const context = threadOf(requestContext)
    const tenantId = tenantOf(context)
    return { context, key: keyOf(context.threadId, tenantId), tenantId }
  }

  return {
    sandbox: ({ requestContext }) => {
      const { context, tenantId } = fromRequest(requestContext)
      return forThread(context.threadId, tenantId === undefined ? {} : { tenant: tenantId })
    },
    sandboxCacheKey: ({ requestContext }) => fromRequest(requestContext).key.cacheKey,
    forThread,
    async endTurn(threadId, threadOptions = {}) {
      const key = keyOf(threadId, threadOptions.tenant ?? (typeof tenant === 'string' ? tenant : undefined))
      await cache.get(key.cacheKey)?._stop()
    },
    async withTurn(threadId, fn, threadOptions = {}) {
      keyOf(threadId, threadOptions.tenant ?? (typeof tenant === 'string' ? tenant : undefined))
      try {
        return await fn()
      } finally {
        await this.endTurn(threadId, threadOptions)
      }
    },
    async endSession(threadId, threadOptions = {}) {
      const key = keyOf(threadId, threadOptions.tenant ?? (typeof tenant === 'string' ? tenant : undefined))
      await cache.get(key.cacheKey)?._stop()
      return sessions.endSession(key.conversationId, { tenant: key.tenant })
    },
    async endAllTurns() {
      await Promise.all([...cache.values()].map((sandbox) => sandbox._stop()))
    },
    async cloneThread(memory, input) {
      const { tenant: tenantId, checkpoint, ...cloneInput } = input
      const source = keyOf(
        cloneInput.sourceThreadId,
        tenantId ?? (typeof tenant === 'string' ? tenant : undefined),
      )
      if (cloneInput.newThreadId !== undefined) keyOf(cloneInput.newThreadId, source.tenant)
      const cloned = await memory.cloneThread(cloneInput)
      const hasSession =
        (await sessions.getSession(source.conversationId, { tenant: source.tenant })) !== null
      const fork = hasSession
        ? await sessions.fork(source.conversationId, cloned.thread.id, {
            tenant: source.tenant,
            ...(checkpoint !== undefined ? { checkpoint } : {}),
          })
        : null
      return { ...cloned, fork }
    },
  }
}
