// The provider's options and each call's input, checked before any I/O.
import { randomUUID } from 'node:crypto'
import { type SessionManager, validateConversationId, validateTenant } from '@sandkeep/core'
import { validatePort } from '@sandkeep/core/provider'
import { invalid } from '../errors.js'
import type { HarnessTenantContext, SandkeepHarnessProviderOptions } from './types.js'

const OPTION_NAMES = [
  'sessions',
  'tenant',
  'ports',
  'workingDirectory',
  'commandTimeoutMs',
  'endGraceMs',
  'description',
  'maxDurationMs',
  'firstCreateTimeoutMs',
  'providerId',
]

/** Longest identity, in characters: the harness's own are 16 hex digits. */
const MAX_IDENTITY_LENGTH = 256
/** What an identity may not contain: it is written to a file in the sandbox and shown in messages. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f]/

/** {@link SandkeepHarnessProviderOptions} checked, with their defaults filled in. */
export interface HarnessSettings {
  sessions: SessionManager
  /** The tenant of the caller, from the `tenant` option (never from the session id). */
  tenantOf: (operation: HarnessTenantContext['operation']) => Promise<string>
  ports: readonly number[]
  /** What the sandbox sessions get (createSandboxSession's options). */
  sessionOptions: Pick<
    SandkeepHarnessProviderOptions,
    'workingDirectory' | 'commandTimeoutMs' | 'endGraceMs' | 'description'
  >
  maxDurationMs: number
  firstCreateTimeoutMs: number
  providerId: string
}

/** @throws SandkeepError INVALID_ARGUMENT for a bad or unknown option. */
export function resolveHarnessOptions(options: SandkeepHarnessProviderOptions): HarnessSettings {
  if (typeof options !== 'object' || options === null) {
    throw invalid('createSandkeepHarnessProvider needs an options object: { sessions, tenant?, ports? }.')
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_NAMES.includes(key)) {
      throw invalid(
        `createSandkeepHarnessProvider has no option ${JSON.stringify(key.slice(0, 40))}; known: ${OPTION_NAMES.join(', ')}.`,
      )
    }
  }
  const { sessions, tenant } = options
  if (typeof sessions !== 'object' || sessions === null || typeof sessions.beginTurn !== 'function') {
    throw invalid(
      'createSandkeepHarnessProvider: `sessions` must be a SessionManager (from createSessionManager).',
    )
  }
  if (tenant !== undefined && typeof tenant !== 'function') validateTenant(tenant)
  const ports = options.ports ?? []
  if (!Array.isArray(ports))
    throw invalid('createSandkeepHarnessProvider: `ports` must be an array of port numbers.')
  for (const port of ports) validatePort(port)
  const providerId = options.providerId ?? 'sandkeep'
  if (typeof providerId !== 'string' || providerId.length === 0) {
    throw invalid('createSandkeepHarnessProvider: `providerId` must be a non-empty string.')
  }
  const sessionOptions: HarnessSettings['sessionOptions'] = {}
  for (const key of ['workingDirectory', 'commandTimeoutMs', 'endGraceMs', 'description'] as const) {
    if (options[key] !== undefined) Object.assign(sessionOptions, { [key]: options[key] })
  }
  return {
    sessions,
    tenantOf: async (operation) =>
      validateTenant(typeof tenant === 'function' ? await tenant(tenantContext(operation)) : tenant),
    ports: Object.freeze([...new Set(ports)]),
    sessionOptions,
    maxDurationMs: checkMs(options.maxDurationMs, 'maxDurationMs', 15 * 60_000),
    firstCreateTimeoutMs: checkMs(options.firstCreateTimeoutMs, 'firstCreateTimeoutMs', 10 * 60_000),
    providerId,
  }
}

/**
 * The resolver's argument: the operation, and a `sessionId` that throws, so the README's old recipe
 * (`({ sessionId }) => sessionId.split(':')[0]`) fails loudly instead of handing out tenants by id.
 */
function tenantContext(operation: HarnessTenantContext['operation']): HarnessTenantContext {
  return Object.freeze(
    Object.defineProperty({ operation }, 'sessionId', {
      enumerable: false,
      get() {
        throw invalid(
          "createSandkeepHarnessProvider: the tenant resolver may not use the session id: whoever calls the harness names it, so the tenant would be theirs to choose (anyone naming 'acme:chat-1' would get acme's sandbox). Return the tenant of the caller you authenticated (a closure over the request, an AsyncLocalStorage), or make one provider per tenant with tenant: '<id>'.",
        )
      },
    }),
  )
}

/**
 * The session id the harness gave, or a fresh one when it gave none (a pre-warm that will not be resumed).
 * @throws SandkeepError INVALID_ARGUMENT for an id that cannot be a conversation id.
 */
export function sessionIdOf(sessionId: unknown): string {
  if (sessionId === undefined) return `harness-${randomUUID()}`
  return validateConversationId(sessionId)
}

/**
 * The identity of what `onFirstCreate` sets up (the harness's hash of its bootstrap recipe): printable text
 * of at most 256 characters, or none.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function identityOf(identity: unknown): string | undefined {
  if (identity === undefined) return undefined
  if (
    typeof identity !== 'string' ||
    identity.length === 0 ||
    identity.length > MAX_IDENTITY_LENGTH ||
    UNPRINTABLE.test(identity)
  ) {
    throw invalid(
      `createSession: identity must be 1 to ${MAX_IDENTITY_LENGTH} printable characters (the harness's bootstrap hash), got ${typeof identity === 'string' ? JSON.stringify(identity.slice(0, 40)) : typeof identity}.`,
    )
  }
  return identity
}

/** A number of milliseconds >= 0, or `fallback` when undefined. */
function checkMs(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalid(`\`${name}\` must be a number of milliseconds >= 0, got ${String(value)}.`)
  }
  return value
}
