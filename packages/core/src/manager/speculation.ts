import { SandkeepError } from '../contract/errors.js'
import type { TurnEndReport } from '../contract/report.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import type { SessionRecord } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import type { ManagerContext } from './context.js'

/** How a speculative connect settled: never a rejection, so an unused one cannot surface as unhandled. */
export type SpeculationResult = { ok: true; handle: SandboxHandle } | { ok: false; error: unknown }

/** A connect started before the lease was granted (see {@link speculate}). */
export interface Speculation {
  readonly sandboxId: string
  readonly turnCount: number
  /** How this process's last turn left the sandbox: what undoing an unused speculation restores. */
  readonly leftAs: TurnEndReport['action']
  /** Retries of the connect so far. */
  readonly retries: number
  readonly result: Promise<SpeculationResult>
  /**
   * Takes the speculation: true the first time only. The resume takes one it uses; the turn end takes
   * whatever the resume did not, to settle it. So it is used or settled once, never both.
   */
  take(): boolean
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
  const last = ctx.state.lastTurn(key)
  if (!last || !ctx.state.isVerified(last.sandboxId, key.tenant)) return undefined
  let retries = 0
  let taken = false
  const connecting = ctx.call(
    () =>
      ctx.provider.connect(last.sandboxId, {
        timeoutMs: ctx.config.sandbox.timeoutMs,
        ...(signal ? { signal } : {}),
      }),
    {
      ...(signal ? { signal } : {}),
      onRetry: () => {
        retries++
      },
    },
  )
  return {
    sandboxId: last.sandboxId,
    turnCount: last.turnCount,
    leftAs: last.leftAs,
    get retries() {
      return retries
    },
    result: connecting.then(
      (handle) => ({ ok: true as const, handle }),
      (error: unknown) => ({ ok: false as const, error }),
    ),
    take() {
      if (taken) return false
      taken = true
      return true
    },
  }
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
  if (!speculation || ctx.state.hasLiveTurn(key)) return
  const settled = await speculation.result
  if (settled.ok) await undoSpeculation(ctx, settled.handle.id, speculation, key)
}

/**
 * The speculative connect, taken, when the record the lease returned proves it was the right call: the same
 * sandbox is mapped, no other turn ended since this process's last one (same turn count) and no other turn
 * held the session when this one acquired it (`holders`, this one included). Otherwise the turn connects as
 * usual after the lease; a speculative connect that turned out wrong only resumed a sandbox this session
 * maps, or one that is gone.
 */
export function confirmedSpeculation(
  speculation: Speculation | undefined,
  holders: number,
  mapped: string,
  record: SessionRecord | null,
): Speculation | undefined {
  // An unconfirmed one stays for the turn end to settle (see settleSpeculation).
  if (!speculation || !record) return undefined
  if (speculation.sandboxId !== mapped || speculation.turnCount !== record.turnCount) return undefined
  if (holders > 1) return undefined
  return speculation.take() ? speculation : undefined
}

/**
 * A speculative connect this turn did not use resumed a sandbox (or pushed its timeout out) without a
 * lease's say-so. Decided after the release: the session's sandbox is left to the last holder's end (as
 * if this turn had touched it: its id is returned, for the last holder to act on); one the session no
 * longer maps is put back as this process left it; with no answer from the store, so is one that no other
 * turn of this process holds.
 */
export async function settleSpeculation(
  ctx: ManagerContext,
  key: SessionKey,
  speculation: Speculation | undefined,
  release: {
    handle: SandboxHandle | undefined
    released: boolean
    last: boolean
    record: SessionRecord | null
  },
): Promise<string | undefined> {
  if (!speculation?.take()) return undefined
  const settled = await speculation.result
  const { handle, released, last, record } = release
  if (!settled.ok || settled.handle.id === handle?.id) return undefined
  const sandboxId = settled.handle.id
  if (released && record?.sandboxId === sandboxId) return last ? sandboxId : undefined
  if (released || !ctx.state.hasLiveTurn(key)) await undoSpeculation(ctx, sandboxId, speculation, key)
  return undefined
}
