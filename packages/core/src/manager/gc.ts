import { SandkeepError } from '../errors.js'
import { SANDKEEP_METADATA } from '../sandbox-metadata.js'
import type { GcOptions, GcResult } from '../session-manager-types.js'
import type { SessionRecord } from '../session-store.js'
import { invalidArgument, rejectUnknownOptions, validateTenant } from '../validation.js'
import type { ManagerContext } from './context.js'

/** A sandbox sandkeep made, found by its metadata. */
interface Found {
  sandboxId: string
  tenant: string
  startedAt?: Date
}

/** The options `gc` knows. */
const GC_OPTIONS = ['tenant', 'dryRun', 'deleteSessions'] as const

/**
 * `sessions.gc`: kills sandkeep sandboxes no session maps (past a grace period, on the store's clock, so a
 * creation in flight is not hit) and finds the sessions whose sandbox is confirmed gone. Those are kept
 * (`keptSessions`): their journal is what the next turn of the conversation recreates the sandbox from, and
 * the store forgets them at their TTL. `deleteSessions` deletes them instead (`deletedSessions`), journal
 * and all, as `endSession` would. `dryRun` reports without doing.
 * @throws SandkeepError CAPABILITY_UNSUPPORTED without the provider's list capability
 */
export async function gc(ctx: ManagerContext, gcOptions?: GcOptions): Promise<GcResult> {
  if (gcOptions !== undefined && (typeof gcOptions !== 'object' || gcOptions === null))
    throw invalidArgument('gc options', 'must be an object.')
  if (gcOptions) rejectUnknownOptions('gc options', gcOptions, GC_OPTIONS)
  const only = gcOptions?.tenant === undefined ? undefined : validateTenant(gcOptions.tenant)
  const dryRun = booleanOption('dryRun', gcOptions?.dryRun)
  const deleteSessions = booleanOption('deleteSessions', gcOptions?.deleteSessions)
  const { provider, config } = ctx
  if (typeof provider.list !== 'function') {
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message: `Provider '${provider.providerId}' cannot list sandboxes, which gc needs.`,
    })
  }
  const sandboxes = await listSandkeepSandboxes(ctx, only)
  // Ages on the store's clock, which every process shares: this process's clock may be off (or jump), and
  // a sandbox it took for old could be one another process is creating right now.
  const now = typeof ctx.store.now === 'function' ? await ctx.store.now() : Date.now()
  const tenants = only ? [only] : [...new Set([...sandboxes.map((s) => s.tenant), 'default'])]
  const result: GcResult = {
    killedSandboxes: [],
    deletedSessions: [],
    keptSessions: [],
    deletedSnapshots: [],
  }
  const live = new Set(sandboxes.map((s) => s.sandboxId))
  // A sandbox younger than this may be one whose creator has not mapped it yet.
  const graceMs = config.createWaitMs + config.leaseMs
  for (const tenant of tenants) {
    const sessions = await listAllSessions(ctx, tenant)
    const mapped = new Set(sessions.flatMap((session) => (session.sandboxId ? [session.sandboxId] : [])))
    for (const session of sessions) {
      if (!session.sandboxId || live.has(session.sandboxId)) continue
      if (!(await isGone(ctx, session))) continue
      const key = { tenant: session.tenant, conversationId: session.conversationId }
      if (!deleteSessions) {
        result.keptSessions.push(key)
        continue
      }
      if (!dryRun) await ctx.store.delete(key)
      result.deletedSessions.push(key)
    }
    for (const sandbox of sandboxes) {
      if (sandbox.tenant !== tenant || mapped.has(sandbox.sandboxId)) continue
      if (sandbox.startedAt && now - sandbox.startedAt.getTime() < graceMs) continue
      if (!dryRun) await ctx.call(() => provider.kill(sandbox.sandboxId))
      result.killedSandboxes.push(sandbox.sandboxId)
    }
  }
  return result
}

function booleanOption(name: string, value: unknown): boolean {
  if (value === undefined) return false
  if (typeof value !== 'boolean') throw invalidArgument(`gc ${name}`, 'must be a boolean.')
  return value
}

/** Every running or paused sandbox sandkeep made (of `only`, when given), found by its metadata. */
async function listSandkeepSandboxes(ctx: ManagerContext, only: string | undefined): Promise<Found[]> {
  const sandboxes: Found[] = []
  let cursor: string | undefined
  do {
    const page = await ctx.call(() =>
      ctx.provider.list!({
        ...(only ? { metadata: { [SANDKEEP_METADATA.tenant]: only } } : {}),
        state: ['running', 'paused'],
        ...(cursor ? { cursor } : {}),
      }),
    )
    for (const info of page.sandboxes) {
      const tenant = info.metadata[SANDKEEP_METADATA.tenant]
      if (tenant === undefined || (only && tenant !== only)) continue
      sandboxes.push({
        sandboxId: info.sandboxId,
        tenant,
        ...(info.startedAt ? { startedAt: info.startedAt } : {}),
      })
    }
    cursor = page.cursor
  } while (cursor)
  return sandboxes
}

async function listAllSessions(ctx: ManagerContext, tenant: string): Promise<SessionRecord[]> {
  const sessions: SessionRecord[] = []
  let cursor: string | undefined
  do {
    const page = await ctx.store.list(tenant, { limit: 1000, ...(cursor ? { cursor } : {}) })
    sessions.push(...page.sessions)
    cursor = page.cursor
  } while (cursor)
  return sessions
}

/** A mapped sandbox missing from the listing: confirmed gone before its mapping (and journal) is dropped. */
async function isGone(ctx: ManagerContext, session: SessionRecord): Promise<boolean> {
  if (session.state === 'killed') return true
  if (typeof ctx.provider.getInfo !== 'function') return false
  try {
    await ctx.provider.getInfo(session.sandboxId!)
    return false
  } catch (error) {
    if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
    return true
  }
}
