import { SandkeepError } from '../errors.js'
import type { ResumeOutcome } from '../report.js'
import type { SandboxHandle } from '../sandbox-provider.js'
import type { SessionRecord } from '../session-store.js'
import { waitForCreation, wakeCreationWaiters } from './creation-wait.js'
import { SANDKEEP_METADATA, sandboxCreateOptions, sessionMetadata } from './metadata.js'
import { checkRecord } from './records.js'
import { confirmedSpeculation } from './speculation.js'
import { rememberVerified, verifyTenant } from './tenancy.js'
import type { ResumeCalls, TurnImpl } from './turn.js'

/** Where the ladder starts: the record the lease returned (or the creator's, after waiting) and whether to create. */
export interface StartingPoint {
  record: SessionRecord | null
  create: boolean
}

/** Where the ladder ended: the rung (`outcome`), the sandbox, and the one it replaced. */
export interface Climbed {
  outcome: ResumeOutcome
  handle: SandboxHandle
  /** The sandbox the session mapped before a recreate or a re-mapping. */
  previousSandboxId?: string
  /** The record the ladder started from. */
  record: SessionRecord | null
}

/**
 * The checked record; when another turn holds the creation claim of a session with no sandbox, the record
 * once that turn mapped one (or the claim, once it lapsed).
 * @throws SandkeepError STORE_CORRUPT, SESSION_BUSY
 */
export async function startingPoint(turn: TurnImpl): Promise<StartingPoint> {
  const record = checkRecord(turn.acquired.record, turn.key)
  const create = turn.acquired.create
  if (!create && !record?.sandboxId) {
    return waitForCreation(turn.ctx, turn.key, () => turn.lease, turn.controller.signal)
  }
  return { record, create }
}

/**
 * The resume ladder: adopt the sandbox of a session the store lost; create when nothing is mapped; otherwise
 * connect (through a confirmed speculation, or after verifying the tenant), following a re-mapped id; recreate
 * a sandbox that is gone (or was killed).
 */
export async function climbLadder(
  turn: TurnImpl,
  start: StartingPoint,
  calls: ResumeCalls,
): Promise<Climbed> {
  const { record, create } = start
  const mapped = record?.sandboxId ?? null
  const lost = record === null && create ? await adoptLostSession(turn, calls) : null
  if (lost) return { outcome: 'resumed', handle: lost, record }
  if (create || !mapped) return { outcome: 'created', handle: await createAndMap(turn, null, calls), record }
  const connected = record?.state !== 'killed' ? await connectMapped(turn, mapped, record, calls) : undefined
  if (!connected) {
    const handle = await createAndMap(turn, mapped, calls)
    return { outcome: 'recreated', handle, previousSandboxId: mapped, record }
  }
  const outcome = record?.state === 'paused' && turn.acquired.holders <= 1 ? 'resumed' : 'reconnected'
  // Only the turn that found nobody holding the session ended the pause; one that joined it must not
  // count the same pause again.
  if (outcome === 'resumed' && record?.pausedAt != null) turn.resumedFromPausedAt = record.pausedAt
  if (connected.id === mapped) return { outcome, handle: connected, record }
  await recordRemapping(turn, connected.id, mapped, record, calls)
  return { outcome, handle: connected, previousSandboxId: mapped, record }
}

/** Connects to the mapped sandbox; undefined when it is gone (SANDBOX_NOT_FOUND). */
async function connectMapped(
  turn: TurnImpl,
  mapped: string,
  record: SessionRecord | null,
  calls: ResumeCalls,
): Promise<SandboxHandle | undefined> {
  const speculated = confirmedSpeculation(turn, mapped, record)
  try {
    if (speculated) {
      turn.touched = mapped
      const settled = await speculated.result
      calls.retries += speculated.retries
      if (!settled.ok) throw settled.error
      return settled.handle
    }
    await verifyTenant(turn.ctx, mapped, turn.key, calls.signal, calls.onRetry)
    turn.touched = mapped
    return await connect(turn, mapped, calls)
  } catch (error) {
    if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
    return undefined
  }
}

function connect(turn: TurnImpl, sandboxId: string, calls: ResumeCalls): Promise<SandboxHandle> {
  const { provider, config } = turn.ctx
  const { signal } = calls
  return calls.call(() => provider.connect(sandboxId, { timeoutMs: config.sandbox.timeoutMs, signal }))
}

/** Maps the session to `sandboxId` (fenced on `expected`), keeping it for `ttlMs`. */
function mapSandbox(
  turn: TurnImpl,
  sandboxId: string,
  expected: string | null,
  template: string | null,
): Promise<SessionRecord> {
  const { store, provider, config } = turn.ctx
  return store.setSandbox(turn.key, turn.lease, {
    sandboxId,
    expectedSandboxId: expected,
    providerId: provider.providerId,
    template,
    state: 'running',
    ttlMs: config.ttlMs,
  })
}

/** The platform re-mapped the sandbox (seen after repeated pause/resume): check and record the new id. */
async function recordRemapping(
  turn: TurnImpl,
  sandboxId: string,
  mapped: string,
  record: SessionRecord | null,
  calls: ResumeCalls,
): Promise<void> {
  await verifyTenant(turn.ctx, sandboxId, turn.key, calls.signal, calls.onRetry)
  try {
    await mapSandbox(turn, sandboxId, mapped, record?.template ?? turn.ctx.config.sandbox.template ?? null)
  } catch (error) {
    // An overlapping turn recorded the same re-mapping first: nothing left to do.
    const now = SandkeepError.hasCode(error, 'LEASE_LOST') ? await turn.ctx.store.get(turn.key) : null
    if (now?.sandboxId !== sandboxId) throw error
  }
}

/** Creates a sandbox and maps the session to it; joins the one an overlapping turn mapped first. */
async function createAndMap(
  turn: TurnImpl,
  expected: string | null,
  calls: ResumeCalls,
): Promise<SandboxHandle> {
  const { ctx } = turn
  const signal = calls.signal
  const handle = await calls.call(() =>
    ctx.provider.create(sandboxCreateOptions(ctx.config, turn.key, signal)),
  )
  rememberVerified(ctx, handle.id, turn.tenant)
  try {
    await mapSandbox(turn, handle.id, expected, ctx.config.sandbox.template ?? null)
    wakeCreationWaiters(ctx.caches, turn.key)
  } catch (error) {
    // Someone else mapped the session first (or our lease lapsed): never leave our sandbox running unmapped.
    await ctx.provider
      .kill(handle.id)
      .catch((killError: unknown) => ctx.emitError('kill-unmapped', killError, turn.key))
    if (!SandkeepError.hasCode(error, 'LEASE_LOST')) throw error
    // An overlapping turn recreated it first: use that one (our lease is still live, or this fails).
    const adopted = await adoptMapping(turn, expected, calls)
    if (!adopted) throw error
    turn.adopted = true
    return adopted
  }
  return handle
}

/** Connects to the sandbox the session maps to now, when it differs from `stale`; null when there is none. */
async function adoptMapping(
  turn: TurnImpl,
  stale: string | null,
  calls: ResumeCalls,
): Promise<SandboxHandle | null> {
  const current = checkRecord(await turn.ctx.store.get(turn.key), turn.key)
  const sandboxId = current?.sandboxId
  if (!sandboxId || sandboxId === stale) return null
  await verifyTenant(turn.ctx, sandboxId, turn.key, calls.signal, calls.onRetry)
  return connect(turn, sandboxId, calls)
}

/**
 * The store has no record of a session this process used (it restarted empty, or the record expired): takes
 * over the sandbox the session mapped to, rather than orphaning it and starting with nothing. Adopting keeps
 * the user's files, memory and processes; it is safe because this process created or verified that sandbox
 * for this very tenant and conversation, and the mapping is written under the creation claim, fenced
 * (`expectedSandboxId: null`), so a second process cannot map another sandbox meanwhile. Null when there is
 * nothing to adopt (the sandbox is gone too): the caller creates one. Either way the report says stateLost.
 */
async function adoptLostSession(turn: TurnImpl, calls: ResumeCalls): Promise<SandboxHandle | null> {
  const known = turn.known
  if (!known) return null
  turn.sessionLost = true
  let handle: SandboxHandle | undefined
  try {
    const speculation = turn.speculation
    if (speculation?.sandboxId === known.sandboxId) {
      turn.speculation = undefined
      turn.touched = known.sandboxId
      const settled = await speculation.result
      if (!settled.ok) throw settled.error
      handle = settled.handle
    } else {
      await verifyTenant(turn.ctx, known.sandboxId, turn.key, calls.signal, calls.onRetry)
      turn.touched = known.sandboxId
      handle = await connect(turn, known.sandboxId, calls)
    }
  } catch (error) {
    if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
    // The platform may have re-mapped it: look for the session's sandbox by the metadata written at creation.
    const found = await findSessionSandbox(turn, known.sandboxId, calls)
    if (found) {
      turn.touched = found
      handle = await connect(turn, found, calls)
    }
  }
  turn.ctx.events.emit('session-lost', {
    conversationId: turn.conversationId,
    tenant: turn.tenant,
    sandboxId: known.sandboxId,
    adopted: handle !== undefined,
  })
  if (!handle) return null
  turn.touched = handle.id
  await mapSandbox(turn, handle.id, null, turn.ctx.config.sandbox.template ?? null)
  wakeCreationWaiters(turn.ctx.caches, turn.key)
  return handle
}

/**
 * A running or paused sandbox other than `gone` whose metadata names this tenant and conversation, via the
 * provider's list capability (undefined without it). The most recently started one when there are several.
 */
async function findSessionSandbox(
  turn: TurnImpl,
  gone: string,
  calls: ResumeCalls,
): Promise<string | undefined> {
  const { provider } = turn.ctx
  if (typeof provider.list !== 'function') return undefined
  const metadata = sessionMetadata(turn.key)
  const signal = calls.signal
  const page = await calls.call(() => provider.list!({ metadata, state: ['running', 'paused'], signal }))
  const candidates = page.sandboxes
    .filter(
      (info) =>
        info.sandboxId !== gone &&
        info.metadata[SANDKEEP_METADATA.tenant] === metadata[SANDKEEP_METADATA.tenant] &&
        info.metadata[SANDKEEP_METADATA.session] === metadata[SANDKEEP_METADATA.session],
    )
    .sort((a, b) => (b.startedAt?.getTime() ?? 0) - (a.startedAt?.getTime() ?? 0))
  const found = candidates[0]?.sandboxId
  if (found) rememberVerified(turn.ctx, found, turn.tenant)
  return found
}
