import { randomUUID } from 'node:crypto'
import { SandkeepError } from '../contract/errors.js'
import type { Turn, TurnOptions } from '../contract/session-manager-types.js'
import type { AcquireResult } from '../contract/session-store.js'
import { invalidArgument, validateSessionKey } from '../contract/validation.js'
import type { ManagerContext } from './context.js'
import { validateTurnOptions } from './options.js'
import { abortedError } from './records.js'
import { TurnImpl } from './turn.js'

/**
 * `sessions.beginTurn`: takes the lease (after the pause of a turn end that still holds
 * the session) and, unless lazy, resumes; a prewarmed turn starts its resume and returns.
 */
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
  // A turn end of this process still pausing the sandbox: connecting now would race that pause.
  const limits = { waitMs: config.createWaitMs, signal: parsed.signal }
  await ctx.state.waitForLocalEnds(key, limits)
  const known = ctx.state.lastTurn(key)
  const leaseOptions = { holderId, leaseMs: config.leaseMs, ttlMs: config.ttlMs }
  ctx.state.turnBegan(key)
  let acquired: AcquireResult
  try {
    acquired = await store.acquire(key, leaseOptions)
  } catch (error) {
    ctx.state.turnEnded(key)
    if (!SandkeepError.hasCode(error, 'SESSION_BUSY')) throw error
    // Another process's turn end holds the session while it pauses: the turn begins after it.
    const acquire = () => store.acquire(key, leaseOptions)
    acquired = await ctx.state.acquireAfterHold(key, acquire, error as SandkeepError, limits)
    ctx.state.turnBegan(key)
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
    lazy: parsed.lazy,
  })
  const prewarm =
    parsed.prewarm === true || (parsed.prewarm === 'auto' && acquired.record?.lastTurnUsedSandbox === true)
  ctx.events.emit('turn-start', {
    conversationId: key.conversationId,
    tenant: key.tenant,
    holderId: acquired.lease.holderId,
    lazy: parsed.lazy,
    prewarm,
  })
  // Settled here, reported by ready() itself; the turn's first call waits for the same resume.
  if (prewarm) turn.ready().catch(() => {})
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
