import { beginTurn, withTurn } from './manager/begin.js'
import { fork, listCheckpoints, restore, rewind } from './manager/branching.js'
import { createManagerContext } from './manager/context.js'
import { gc } from './manager/gc.js'
import { endSession, getSession, listSessions } from './manager/sessions.js'
import type { SessionManager, SessionManagerOptions } from './session-manager-types.js'

/**
 * Creates the session manager: turns that resume a conversation's sandbox, check what survived the pause,
 * repair and rehydrate what did not, and pause it again when the last turn ends. Synchronous; no I/O until the
 * first call. The phases live under `manager/` (see the package README's "Where things are").
 * @throws SandkeepError INVALID_ARGUMENT on bad options, CAPABILITY_UNSUPPORTED when `onTurnEnd` needs a
 *   provider capability that is missing.
 */
export function createSessionManager(options: SessionManagerOptions): SessionManager {
  const ctx = createManagerContext(options)
  return {
    beginTurn: (conversationId, turnOptions) => beginTurn(ctx, conversationId, turnOptions),
    withTurn: (conversationId, fn, turnOptions) => withTurn(ctx, conversationId, fn, turnOptions),
    endSession: (conversationId, endOptions) => endSession(ctx, conversationId, endOptions),
    getSession: (conversationId, getOptions) => getSession(ctx, conversationId, getOptions),
    listSessions: (listOptions) => listSessions(ctx, listOptions),
    gc: (gcOptions) => gc(ctx, gcOptions),
    rewind: (conversationId, rewindOptions) => rewind(ctx, conversationId, rewindOptions),
    restore: (conversationId, restoreOptions) => restore(ctx, conversationId, restoreOptions),
    fork: (conversationId, newConversationId, forkOptions) =>
      fork(ctx, conversationId, newConversationId, forkOptions),
    listCheckpoints: (conversationId, listOptions) => listCheckpoints(ctx, conversationId, listOptions),
    on: (event, listener) => ctx.events.on(event, listener),
    store: ctx.config.store,
    provider: ctx.provider,
  }
}
