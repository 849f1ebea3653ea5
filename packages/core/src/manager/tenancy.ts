import { SandkeepError } from '../contract/errors.js'
import { SANDKEEP_METADATA } from '../contract/sandbox-metadata.js'
import type { SessionKey } from '../contract/validation.js'
import type { ManagerContext } from './context.js'

/**
 * Refuses a sandbox whose metadata names another tenant. Read with `getInfo` (no resume) the first time this
 * process meets the sandbox; metadata never changes, so a verified id is remembered. `onRetry` has no
 * default: a resume must count every retry for `report.retries`, so each caller says where its retries go.
 * @throws SandkeepError TENANT_MISMATCH, or the provider's error
 */
export async function verifyTenant(
  ctx: ManagerContext,
  sandboxId: string,
  key: SessionKey,
  signal: AbortSignal,
  onRetry: () => void,
): Promise<void> {
  const { provider } = ctx
  if (ctx.state.isVerified(sandboxId, key.tenant)) return
  if (typeof provider.getInfo !== 'function') return
  const info = await ctx.call(() => provider.getInfo!(sandboxId, { signal }), { signal, onRetry })
  const owner = info.metadata[SANDKEEP_METADATA.tenant]
  if (owner !== undefined && owner !== key.tenant) {
    throw new SandkeepError({
      code: 'TENANT_MISMATCH',
      message: `Sandbox ${sandboxId} belongs to another tenant; it was not used. The session's mapping is wrong: end the session to start a fresh sandbox.`,
      tenant: key.tenant,
      conversationId: key.conversationId,
      sandboxId,
    })
  }
  ctx.state.rememberTenant(sandboxId, key.tenant)
}

/**
 * Kills the sandbox a session maps to, when it is this tenant's. A mapping to another tenant's sandbox is wrong:
 * it is reported (`error` event, phase `end-session`) and that sandbox is left alone; one already gone is fine.
 * @throws the provider's or the store's other errors
 */
export async function killOwnedSandbox(
  ctx: ManagerContext,
  sandboxId: string,
  key: SessionKey,
): Promise<void> {
  try {
    // Not part of a turn: no report counts these retries.
    await verifyTenant(ctx, sandboxId, key, new AbortController().signal, () => {})
    await ctx.call(() => ctx.provider.kill(sandboxId))
  } catch (error) {
    if (SandkeepError.hasCode(error, 'TENANT_MISMATCH')) ctx.emitError('end-session', error, key)
    else if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
  }
}
