// createSandkeepHarnessProvider wires the AI SDK harness's sandbox spec (`harness-sandbox-v1`) onto the
// session manager: options.ts checks what it is given, network-session.ts is the session the harness holds,
// first-create.ts runs onFirstCreate once per sandbox, network-policy.ts maps network policies, tools.ts
// types the sandbox tools for a HarnessAgent. One harness session id is one sandkeep conversation;
// createSession and resumeSession begin its turn through the resume ladder (create, resume, recreate and
// rehydrate, the health checks and their repairs); stop() ends the turn, destroy() the session.
import { SandkeepError, validateConversationId } from '@sandkeep/core'
import { invalid } from '../errors.js'
import { createSandboxSession, restrictedSandboxSession } from '../sandbox-session/index.js'
import { ensureFirstCreate, type FirstCreateHook } from './first-create.js'
import { createNetworkSession } from './network-session.js'
import { type HarnessSettings, identityOf, resolveHarnessOptions, sessionIdOf } from './options.js'
import type {
  SandkeepHarnessProvider,
  SandkeepHarnessProviderOptions,
  SandkeepNetworkSandboxSession,
} from './types.js'

export { type HarnessToolSet, harnessSandboxTools } from './tools.js'
export type {
  HarnessCreateSessionOptions,
  HarnessResumeSessionOptions,
  HarnessTenantContext,
  SandkeepHarnessProvider,
  SandkeepHarnessProviderOptions,
  SandkeepNetworkSandboxSession,
} from './types.js'

/** How many sessions' onFirstCreate hooks a provider keeps for their resumes in this process. */
const REMEMBERED_HOOKS = 1000

interface FirstCreate {
  hook: FirstCreateHook
  identity: string | undefined
  /** The tenant whose createSession gave the hook: the session's owner. */
  owner: string
}

/**
 * The AI SDK harness's sandbox provider (`HarnessV1SandboxProvider`, `'harness-sandbox-v1'`) on a sandkeep
 * session manager. Synchronous and free; the first session's calls do the I/O.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export function createSandkeepHarnessProvider(
  options: SandkeepHarnessProviderOptions,
): SandkeepHarnessProvider {
  const settings = resolveHarnessOptions(options)
  // A function cannot be stored with the session: a resume in this process that finds a new sandbox (the
  // old one expired) runs the hook its createSession was given; one in another process cannot.
  const hooks = new Map<string, FirstCreate>()
  const keyOf = (tenant: string, sessionId: string) => `${tenant}\u0000${sessionId}`

  return {
    specificationVersion: 'harness-sandbox-v1',
    providerId: settings.providerId,
    createSession: async (createOptions = {}) => {
      if (typeof createOptions !== 'object' || createOptions === null) {
        throw invalid(
          'createSession takes an options object: { sessionId?, identity?, onFirstCreate?, abortSignal? }.',
        )
      }
      const sessionId = sessionIdOf(createOptions.sessionId)
      const identity = identityOf(createOptions.identity)
      const { onFirstCreate, abortSignal } = createOptions
      if (onFirstCreate !== undefined && typeof onFirstCreate !== 'function') {
        throw invalid('createSession: onFirstCreate must be a function.')
      }
      const tenant = await settings.tenantOf('createSession')
      // The hook is kept under the caller's own tenant: another tenant's createSession of the same id is another
      // session and never reaches this one's hook.
      const firstCreate = onFirstCreate ? { hook: onFirstCreate, identity, owner: tenant } : undefined
      if (firstCreate) remember(hooks, keyOf(tenant, sessionId), firstCreate)
      return open(settings, { sessionId, tenant, abortSignal, firstCreate })
    },
    resumeSession: async (resumeOptions) => {
      if (typeof resumeOptions !== 'object' || resumeOptions === null) {
        throw invalid('resumeSession takes an options object: { sessionId, abortSignal? }.')
      }
      const sessionId = validateConversationId(resumeOptions.sessionId)
      const tenant = await settings.tenantOf('resumeSession')
      const { abortSignal } = resumeOptions
      // A resume never starts a conversation: without a session there is nothing to resume.
      if (!(await settings.sessions.getSession(sessionId, { tenant }))) {
        throw new SandkeepError({
          code: 'SANDBOX_NOT_FOUND',
          message: `No sandkeep session for harness session ${JSON.stringify(sessionId.slice(0, 80))} (tenant ${tenant}): it was never created, was destroyed, or outlived the store's TTL. Start it with createSession.`,
          conversationId: sessionId,
          tenant,
        })
      }
      return open(settings, {
        sessionId,
        tenant,
        abortSignal,
        firstCreate: hooks.get(keyOf(tenant, sessionId)),
      })
    },
  }
}

/** Begins the session's turn, resumes its sandbox, runs onFirstCreate where needed. */
async function open(
  settings: HarnessSettings,
  input: {
    sessionId: string
    tenant: string
    abortSignal: AbortSignal | undefined
    firstCreate: FirstCreate | undefined
  },
): Promise<SandkeepNetworkSandboxSession> {
  const { sessionId, tenant, abortSignal, firstCreate } = input
  if (abortSignal?.aborted) throw abortSignal.reason
  // The start's signal aborts the start only: the turn lives until stop() or destroy().
  const sandbox = createSandboxSession({
    sessions: settings.sessions,
    conversationId: sessionId,
    tenant,
    ...settings.sessionOptions,
  })
  const signal = abortSignal ? { abortSignal } : {}
  try {
    const handle = await sandbox.ready(signal)
    const restricted = restrictedSandboxSession(sandbox, 'the harness does, through stop() or destroy()')
    const firstCreateRan = firstCreate
      ? await ensureFirstCreate({
          session: restricted,
          hook: firstCreate.hook,
          identity: firstCreate.identity,
          timeoutMs: settings.firstCreateTimeoutMs,
          abortSignal,
        })
      : false
    return createNetworkSession({ settings, sandbox, restricted, handle, firstCreateRan })
  } catch (error) {
    await sandbox.end().catch(() => undefined)
    throw await forHarness(error, settings.providerId)
  }
}

/**
 * The spec asks providers to report refused credentials as the harness's HarnessSandboxAuthenticationError.
 * It is loaded only then, so @ai-sdk/harness stays a types-only dependency everywhere else.
 */
async function forHarness(error: unknown, sandboxProviderId: string): Promise<unknown> {
  if (!SandkeepError.hasCode(error, 'PROVIDER_AUTH')) return error
  try {
    const { HarnessSandboxAuthenticationError } = await import('@ai-sdk/harness')
    return new HarnessSandboxAuthenticationError({ message: error.message, sandboxProviderId, cause: error })
  } catch {
    return error
  }
}

function remember(hooks: Map<string, FirstCreate>, key: string, firstCreate: FirstCreate): void {
  const kept = hooks.get(key)
  // Keys carry the tenant, so this never happens; if it ever did, the owner's hook stays.
  if (kept && kept.owner !== firstCreate.owner) {
    throw new SandkeepError({
      code: 'TENANT_MISMATCH',
      message: `onFirstCreate of tenant ${firstCreate.owner} cannot replace tenant ${kept.owner}'s hook.`,
      tenant: firstCreate.owner,
    })
  }
  hooks.delete(key)
  hooks.set(key, firstCreate)
  if (hooks.size > REMEMBERED_HOOKS) hooks.delete(hooks.keys().next().value as string)
}
