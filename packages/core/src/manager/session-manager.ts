import { hashConversationId } from '../contract/sandbox-metadata.js'
import type { SessionManager, SessionManagerOptions } from '../contract/session-manager-types.js'
import { logManagerEvents, resolveLogger } from '../telemetry/logger.js'
import { sessionAttributes } from '../telemetry/tracer.js'
import { beginTurn, withTurn } from './begin.js'
import { fork, listCheckpoints, restore, rewind } from './branching.js'
import { ManagerCloser } from './close.js'
import { createManagerContext } from './context.js'
import { gc } from './gc.js'
import { endSession, getSession, listSessions } from './sessions.js'

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
      run('rewind', () =>
        ctx.telemetry.tracer.phase(
          'sandkeep.rewind',
          operationAttributes(conversationId, rewindOptions),
          () => rewind(ctx, conversationId, rewindOptions),
          (result) => ({
            'sandkeep.rewind.to_turn': result.toTurn,
            'sandkeep.restore.source': result.source,
            'sandkeep.rewind.dropped_turns': result.droppedTurns.length,
          }),
        ),
      ),
    restore: (conversationId, restoreOptions) =>
      run('restore', () =>
        ctx.telemetry.tracer.phase(
          'sandkeep.restore',
          operationAttributes(conversationId, restoreOptions),
          () => restore(ctx, conversationId, restoreOptions),
          (result) => ({
            'sandkeep.restore.to_turn': result.toTurn,
            'sandkeep.restore.source': result.source,
          }),
        ),
      ),
    fork: (conversationId, newConversationId, forkOptions) =>
      run('fork', () =>
        ctx.telemetry.tracer.phase(
          'sandkeep.fork',
          operationAttributes(conversationId, forkOptions),
          () => fork(ctx, conversationId, newConversationId, forkOptions),
          (result) => ({
            'sandkeep.fork.at_turn': result.atTurn,
            'sandkeep.restore.source': result.source,
            'sandkeep.fork.conversation.hash': hashConversationId(result.conversationId),
          }),
        ),
      ),
    listCheckpoints: (conversationId, listOptions) =>
      run('listCheckpoints', () => listCheckpoints(ctx, conversationId, listOptions)),
    close: (closeOptions) => closer.close(closeOptions),
    on: (event, listener) => ctx.events.on(event, listener),
    store: ctx.config.store,
    provider: ctx.provider,
  }
}

/**
 * The session attributes of a rewind's or fork's span (tenant, conversation hash), read without checking:
 * the operation checks its input, and a bad one only leaves attributes out.
 */
function operationAttributes(conversationId: unknown, options: unknown) {
  const tenant = (options as { tenant?: unknown } | undefined)?.tenant
  return sessionAttributes({ tenant: typeof tenant === 'string' ? tenant : 'default', conversationId })
}
