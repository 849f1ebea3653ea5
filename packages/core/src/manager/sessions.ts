import type { SessionRecord } from '../contract/session-store.js'
import { invalidArgument, validateInteger, validateSessionKey } from '../contract/validation.js'
import { deleteReleasedSnapshots } from './checkpoints.js'
import type { ManagerContext } from './context.js'
import { providerHasSnapshots, tenantOption } from './options.js'
import { checkRecord } from './records.js'
import { killOwnedSandbox } from './tenancy.js'

/**
 * `sessions.endSession`: kills the session's sandbox (when it is this tenant's), deletes the session with its
 * checkpoints, then their snapshots on the platform (a failure there is reported; gc deletes what is left).
 */
export async function endSession(
  ctx: ManagerContext,
  conversationId: string,
  endOptions?: { tenant?: string },
): Promise<boolean> {
  const key = validateSessionKey(conversationId, tenantOption(endOptions))
  ctx.state.rememberLastTurn(key, null)
  const record = checkRecord(await ctx.store.get(key), key)
  if (!record) return false
  if (record.sandboxId) await killOwnedSandbox(ctx, record.sandboxId, key)
  // Only a provider that can delete snapshots has any to delete: without one, no extra store call.
  const checkpoints =
    typeof ctx.store.readCheckpoints === 'function' && providerHasSnapshots(ctx.provider)
      ? await ctx.store.readCheckpoints(key)
      : []
  const deleted = await ctx.store.delete(key)
  await deleteReleasedSnapshots(ctx, key, checkpoints, [])
  return deleted
}

/** `sessions.getSession`: the stored record. */
export async function getSession(
  ctx: ManagerContext,
  conversationId: string,
  getOptions?: { tenant?: string },
): Promise<SessionRecord | null> {
  const key = validateSessionKey(conversationId, tenantOption(getOptions))
  return ctx.store.get(key)
}

/** `sessions.listSessions`: one page of a tenant's sessions. */
export async function listSessions(
  ctx: ManagerContext,
  listOptions?: { tenant?: string; limit?: number; cursor?: string },
) {
  const tenant = tenantOption(listOptions)
  const limit =
    listOptions?.limit === undefined ? undefined : validateInteger('limit', listOptions.limit, 1, 1000)
  const cursor = listOptions?.cursor
  if (cursor !== undefined && typeof cursor !== 'string')
    throw invalidArgument('cursor', 'must be a string from a previous page.')
  return ctx.store.list(tenant, { ...(limit ? { limit } : {}), ...(cursor ? { cursor } : {}) })
}
