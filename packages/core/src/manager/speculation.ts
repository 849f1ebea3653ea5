import { SandkeepError } from '../errors.js'
import type { TurnEndReport } from '../report.js'
import type { SandboxHandle } from '../sandbox-provider.js'
import type { SessionRecord } from '../session-store.js'
import type { SessionKey } from '../validation.js'
import { hasLiveTurn, sessionCacheKey } from './caches.js'
import type { ManagerContext } from './context.js'
import { isVerified } from './tenancy.js'
import type { TurnImpl } from './turn.js'

/** A connect started before the lease was granted (see {@link speculate}). */
export interface Speculation {
  sandboxId: string
  turnCount: number
  /** How this process's last turn left the sandbox: what undoing an unused speculation restores. */
  leftAs: TurnEndReport['action']
  retries: number
  result: Promise<{ ok: true; handle: SandboxHandle } | { ok: false; error: unknown }>
}

/**
 * Starts connecting to the sandbox this process's last turn of the conversation used, while the lease is
 * being taken, so that a turn costs the longer of the two calls rather than both. Only for a sandbox whose
 * tenant was already verified here; the turn uses the result only if the lease confirms it.
 */
export function speculate(
  ctx: ManagerContext,
  key: SessionKey,
  signal: AbortSignal | undefined,
): Speculation | undefined {
  if (!ctx.config.speculativeConnect) return undefined
  const last = ctx.caches.lastTurns.get(sessionCacheKey(key))
  if (!last || !isVerified(ctx, last.sandboxId, key.tenant)) return undefined
  const speculation: Speculation = { ...last, retries: 0, result: undefined as never }
  const connecting = ctx.call(
    () =>
      ctx.provider.connect(last.sandboxId, {
        timeoutMs: ctx.config.sandbox.timeoutMs,
        ...(signal ? { signal } : {}),
      }),
    {
      ...(signal ? { signal } : {}),
      onRetry: () => {
        speculation.retries++
      },
    },
  )
  // Settled, never rejected: an unused speculation must not surface as an unhandled rejection.
  speculation.result = connecting.then(
    (handle) => ({ ok: true as const, handle }),
    (error: unknown) => ({ ok: false as const, error }),
  )
  return speculation
}

/**
 * Puts the sandbox of an unused speculation back as this process's last turn left it: paused again, or its
 * idle timeout restored (the connect set the sandbox timeout). Errors are reported, not thrown.
 */
export async function undoSpeculation(
  ctx: ManagerContext,
  sandboxId: string,
  speculation: Speculation,
  key: SessionKey,
): Promise<void> {
  const { provider, config } = ctx
  try {
    if (speculation.leftAs === 'paused' && provider.pause) {
      await ctx.call(() => provider.pause!(sandboxId))
    } else if (speculation.leftAs === 'auto-pause' && provider.setTimeout) {
      await ctx.call(() => provider.setTimeout!(sandboxId, config.idleTimeoutMs))
    }
  } catch (error) {
    if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) ctx.emitError('undo-speculation', error, key)
  }
}

/** The acquire failed: nothing confirms the speculation. Undone unless another turn here holds the session. */
export async function dropSpeculation(
  ctx: ManagerContext,
  speculation: Speculation | undefined,
  key: SessionKey,
): Promise<void> {
  if (!speculation || hasLiveTurn(ctx.caches, key)) return
  const settled = await speculation.result
  if (settled.ok) await undoSpeculation(ctx, settled.handle.id, speculation, key)
}

/**
 * The speculative connect, when the record the lease returned proves it was the right call: the same
 * sandbox is mapped, no other turn ended since this process's last one (same turn count) and no other
 * turn holds the session now. Otherwise the turn connects as usual after the lease; a speculative
 * connect that turned out wrong only resumed a sandbox this session maps, or one that is gone.
 */
export function confirmedSpeculation(
  turn: TurnImpl,
  mapped: string,
  record: SessionRecord | null,
): Speculation | undefined {
  const speculation = turn.speculation
  // An unconfirmed one stays for the turn end to settle (see settleSpeculation).
  if (!speculation || !record) return undefined
  if (speculation.sandboxId !== mapped || speculation.turnCount !== record.turnCount) return undefined
  if (turn.acquired.holders > 1) return undefined
  turn.speculation = undefined
  return speculation
}

/**
 * A speculative connect this turn did not use resumed a sandbox (or pushed its timeout out) without a
 * lease's say-so. Decided after the release: the session's sandbox is left to the last holder's end (as
 * if this turn had touched it); one the session no longer maps is put back as this process left it; with
 * no answer from the store, so is one that no other turn of this process holds.
 */
export async function settleSpeculation(
  turn: TurnImpl,
  handle: SandboxHandle | undefined,
  released: boolean,
  last: boolean,
  record: SessionRecord | null,
): Promise<void> {
  const speculation = turn.speculation
  turn.speculation = undefined
  if (!speculation) return
  const settled = await speculation.result
  if (!settled.ok || settled.handle.id === handle?.id) return
  const sandboxId = settled.handle.id
  if (released && record?.sandboxId === sandboxId) {
    if (last) turn.touched = sandboxId
    return
  }
  if (released || !hasLiveTurn(turn.ctx.caches, turn.key))
    await undoSpeculation(turn.ctx, settled.handle.id, speculation, turn.key)
}
