import { logManagerEvents, resolveLogger } from './logger.js'
import { beginTurn, withTurn } from './manager/begin.js'
import { fork, listCheckpoints, rewind } from './manager/branching.js'
import { ManagerCloser } from './manager/close.js'
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
  const logger = resolveLogger(options.logger, options.debug)
  const unlog = logger ? logManagerEvents(logger, ctx.events.on) : () => {}
  const closer = new ManagerCloser(ctx, logger, unlog)
  const run = closer.run.bind(closer)
  return {
    beginTurn: (conversationId, turnOptions) =>
      run('beginTurn', () => beginTurn(ctx, conversationId, turnOptions)),
    withTurn: (conversationId, fn, turnOptions) =>
      run('withTurn', () => withTurn(ctx, conversationId, fn, turnOptions)),
    endSession: (conversationId, endOptions) =>
      run('endSession', () => endSession(ctx, conversationId, endOptions)),
    getSession: (conversationId, getOptions) =>
      run('getSession', () => getSession(ctx, conversationId, getOptions)),
    listSessions: (listOptions) => run('listSessions', () => listSessions(ctx, listOptions)),
    gc: (gcOptions) => run('gc', () => gc(ctx, gcOptions)),
    rewind: (conversationId, rewindOptions) =>
      run('rewind', () => rewind(ctx, conversationId, rewindOptions)),
    fork: (conversationId, newConversationId, forkOptions) =>
      run('fork', () => fork(ctx, conversationId, newConversationId, forkOptions)),
    listCheckpoints: (conversationId, listOptions) =>
      run('listCheckpoints', () => listCheckpoints(ctx, conversationId, listOptions)),
    close: (closeOptions) => closer.close(closeOptions),
    on: (event, listener) => ctx.events.on(event, listener),
    store: ctx.config.store,
    provider: ctx.provider,
  }
}
