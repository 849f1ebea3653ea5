import { randomUUID } from 'node:crypto'
import type { Turn, TurnOptions } from '../session-manager-types.js'
import type { AcquireResult } from '../session-store.js'
import { invalidArgument, validateSessionKey } from '../validation.js'
import { countLiveTurn, sessionCacheKey } from './caches.js'
import type { ManagerContext } from './context.js'
import { validateTurnOptions } from './options.js'
import { abortedError } from './records.js'
import { dropSpeculation, speculate } from './speculation.js'
import { TurnImpl } from './turn.js'

/** `sessions.beginTurn`: takes the lease (connecting speculatively meanwhile) and, unless lazy, resumes. */
export function beginTurn(
  ctx: ManagerContext,
  conversationId: string,
  turnOptions?: TurnOptions,
): Promise<Turn> {
  return ctx.telemetry.tracer.turn(conversationId, turnOptions, () => begin(ctx, conversationId, turnOptions))
}

async function begin(ctx: ManagerContext, conversationId: string, turnOptions?: TurnOptions): Promise<Turn> {
  const { config, store } = ctx
  const beganAt = performance.now()
  const parsed = validateTurnOptions(turnOptions)
  const key = validateSessionKey(conversationId, parsed.tenant)
  if (parsed.signal?.aborted) throw abortedError(key, parsed.signal.reason)
  const holderId = randomUUID()
  const known = ctx.caches.lastTurns.get(sessionCacheKey(key))
  const speculation = parsed.lazy ? undefined : speculate(ctx, key, parsed.signal)
  countLiveTurn(ctx.caches, key, 1)
  let acquired: AcquireResult
  try {
    acquired = await store.acquire(key, { holderId, leaseMs: config.leaseMs, ttlMs: config.ttlMs })
  } catch (error) {
    countLiveTurn(ctx.caches, key, -1)
    // No lease, no record: nothing confirms the speculation.
    await dropSpeculation(ctx, speculation, key)
    throw error
  }
  const storeMs = performance.now() - beganAt
  const turn = new TurnImpl({
    ctx,
    key,
    acquired,
    beganAt,
    storeMs,
    callerSignal: parsed.signal,
    known,
    speculation,
    lazy: parsed.lazy,
  })
  ctx.events.emit('turn-start', {
    conversationId: key.conversationId,
    tenant: key.tenant,
    holderId: acquired.lease.holderId,
    lazy: parsed.lazy,
  })
  if (!parsed.lazy) {
    try {
      await turn.ready()
    } catch (error) {
      await turn.end()
      throw error
    }
  }
  return turn
}

/** `sessions.withTurn`: a turn around `fn`, ended however `fn` ends. */
export async function withTurn<T>(
  ctx: ManagerContext,
  conversationId: string,
  fn: (turn: Turn) => Promise<T>,
  turnOptions?: TurnOptions,
): Promise<T> {
  if (typeof fn !== 'function') throw invalidArgument('withTurn', 'needs a function as its second argument.')
  const turn = await beginTurn(ctx, conversationId, turnOptions)
  try {
    return await ctx.telemetry.tracer.within(turn, () => fn(turn))
  } finally {
    await turn.end()
  }
}
