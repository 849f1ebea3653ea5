import { type SessionManager, validateConversationId, validateTenant } from '@sandkeep/core'
import { invalid } from './errors.js'

/** Options of `createSandkeepSandboxClient`. */
export interface SandkeepSandboxClientOptions {
  /** The session manager whose sessions the Agents SDK's sandbox sessions are. */
  sessions: SessionManager
  /**
   * What `client.delete(state)` does: `false` (default) ends the turn only (the sandbox is paused, the session
   * kept for the next run); `true` ends the session (the sandbox is killed and the mapping dropped).
   */
  deleteEndsSession?: boolean
  /**
   * The workspace root used when the manifest keeps the Agents SDK's default (`/workspace`, which an E2B
   * sandbox's user cannot create). Absolute. Default `/home/user/workspace`.
   */
  defaultRoot?: string
  /** Tenant for runs whose options name none. Default `'default'`. */
  tenant?: string
}

/** What `SandboxRunConfig.options` carries for this client: the conversation the run belongs to. */
export interface SandkeepRunOptions {
  /** The conversation whose sandbox the run uses (1 to 512 bytes, no control characters). */
  conversationId: string
  /** Tenant of the conversation; default the client's `tenant`, else `'default'`. */
  tenant?: string
  /** Resume the sandbox on first use, so a run that never touches it makes no provider call. Default false. */
  lazy?: boolean
  [key: string]: unknown
}

/** The session key a run's options name, validated. */
export interface RunKey {
  conversationId: string
  tenant: string
  lazy: boolean
}

const runOptionNames = new Set(['conversationId', 'tenant', 'lazy'])
const clientOptionNames = new Set(['sessions', 'deleteEndsSession', 'defaultRoot', 'tenant'])

/** Checks the client's options (unknown names, a root that is not absolute) before anything is made. */
export function validateClientOptions(options: SandkeepSandboxClientOptions): Required<
  Omit<SandkeepSandboxClientOptions, 'tenant'>
> & {
  tenant: string | undefined
} {
  if (options === null || typeof options !== 'object') {
    throw invalid('createSandkeepSandboxClient takes an options object with `sessions` (a session manager).')
  }
  rejectUnknown('createSandkeepSandboxClient', options, clientOptionNames)
  const { sessions, deleteEndsSession = false, defaultRoot = '/home/user/workspace', tenant } = options
  if (!sessions || typeof sessions.beginTurn !== 'function') {
    throw invalid('createSandkeepSandboxClient needs `sessions`: a manager made by createSessionManager.')
  }
  if (typeof deleteEndsSession !== 'boolean') throw invalid('`deleteEndsSession` must be a boolean.')
  if (typeof defaultRoot !== 'string' || !defaultRoot.startsWith('/') || defaultRoot.includes('\0')) {
    throw invalid('`defaultRoot` must be an absolute path inside the sandbox, such as /home/user/workspace.')
  }
  return {
    sessions,
    deleteEndsSession,
    defaultRoot,
    tenant: tenant === undefined ? undefined : validateTenant(tenant),
  }
}

/** Reads the conversation a run is for from `SandboxRunConfig.options`; INVALID_ARGUMENT when it is missing. */
export function readRunKey(options: unknown, defaultTenant: string | undefined): RunKey {
  if (options === null || typeof options !== 'object') {
    throw invalid(
      'The sandkeep sandbox client needs `sandbox.options.conversationId` in the run config: the conversation whose sandbox this run uses.',
    )
  }
  const record = options as Record<string, unknown>
  rejectUnknown('sandbox.options', record, runOptionNames)
  const conversationId = validateConversationId(record.conversationId)
  const tenantValue = record.tenant ?? defaultTenant
  const tenant = tenantValue === undefined ? 'default' : validateTenant(tenantValue)
  if (record.lazy !== undefined && typeof record.lazy !== 'boolean')
    throw invalid('`lazy` must be a boolean.')
  return { conversationId, tenant, lazy: record.lazy === true }
}

function rejectUnknown(what: string, value: object, known: Set<string>): void {
  const unknown = Object.keys(value).filter((key) => !known.has(key))
  if (unknown.length > 0) {
    throw invalid(`${what} has unknown option(s) ${unknown.join(', ')}; known: ${[...known].join(', ')}.`)
  }
}
