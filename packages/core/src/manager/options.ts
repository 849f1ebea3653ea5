import { validateJournalStep } from '../assessment/rehydrate.js'
import { SandkeepError } from '../contract/errors.js'
import type { HealthCheck } from '../contract/health.js'
import type { NamesEveryOption } from '../contract/option-names.js'
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../contract/retry.js'
import { SANDKEEP_METADATA } from '../contract/sandbox-metadata.js'
import type {
  CreateCapability,
  SandboxCreateNetwork,
  SandboxLifecycle,
  SandboxProvider,
} from '../contract/sandbox-provider.js'
import type {
  CheckpointsOption,
  OnTurnEnd,
  SessionManagerOptions,
  TurnOptions,
} from '../contract/session-manager-types.js'
import type { SessionStore } from '../contract/session-store.js'
import {
  invalidArgument,
  rejectUnknownOptions,
  validateInteger,
  validateNetworkPolicy,
  validateTenant,
} from '../contract/validation.js'

/** Every option name of createSessionManager. */
const SESSION_MANAGER_OPTION_NAMES = [
  'store',
  'provider',
  'onTurnEnd',
  'idleTimeoutMs',
  'sandbox',
  'healthChecks',
  'checkpoints',
  'fidelityProbes',
  'speculativeConnect',
  'bootstrap',
  'rehydrate',
  'leaseMs',
  'ttlMs',
  'createWaitMs',
  'retry',
  'telemetry',
  'logger',
  'debug',
] as const satisfies readonly (keyof SessionManagerOptions)[]
/** Every option name of its `sandbox` option. */
const SANDBOX_OPTION_NAMES = [
  'template',
  'timeoutMs',
  'metadata',
  'envs',
  'allowInternetAccess',
  'lifecycle',
  'network',
  'secure',
] as const satisfies readonly (keyof SandboxOptions)[]
/** Every field of `sandbox.lifecycle` and of `sandbox.network`. */
const LIFECYCLE_NAMES = ['onTimeout', 'autoResume'] as const satisfies readonly (keyof SandboxLifecycle)[]
const NETWORK_NAMES = [
  'allowPublicTraffic',
  'allowOut',
  'denyOut',
  'maskRequestHost',
] as const satisfies readonly (keyof SandboxCreateNetwork)[]
/** Every option name of beginTurn and withTurn. */
const TURN_OPTION_NAMES = [
  'tenant',
  'abortSignal',
  'lazy',
  'prewarm',
] as const satisfies readonly (keyof TurnOptions)[]
/** Every option name of its `checkpoints` option. */
const CHECKPOINT_OPTION_NAMES = [
  'every',
  'keep',
  'tenantLimits',
] as const satisfies readonly (keyof CheckpointsOption)[]
const optionListsComplete: [
  NamesEveryOption<SessionManagerOptions, typeof SESSION_MANAGER_OPTION_NAMES>,
  NamesEveryOption<SandboxOptions, typeof SANDBOX_OPTION_NAMES>,
  NamesEveryOption<TurnOptions, typeof TURN_OPTION_NAMES>,
  NamesEveryOption<CheckpointsOption, typeof CHECKPOINT_OPTION_NAMES>,
  NamesEveryOption<SandboxLifecycle, typeof LIFECYCLE_NAMES>,
  NamesEveryOption<SandboxCreateNetwork, typeof NETWORK_NAMES>,
] = [true, true, true, true, true, true]
void optionListsComplete
const ON_TURN_END: readonly OnTurnEnd[] = ['pause', 'auto-pause', 'keep', 'kill']
const CHECK_KINDS = ['process', 'port', 'code', 'file', 'custom']
const BUILT_IN_PROBES = ['memory', 'filesystem', 'processes']
const DAY_MS = 24 * 60 * 60 * 1000

type SandboxOptions = NonNullable<SessionManagerOptions['sandbox']>

/** The sandbox settings every creation uses. */
export interface ResolvedSandboxOptions {
  template: string | undefined
  timeoutMs: number
  metadata: Record<string, string>
  envs: Record<string, string> | undefined
  allowInternetAccess: boolean
  /** What the platform does at the timeout: the option, else the safety net's default; undefined: the platform's. */
  lifecycle: SandboxLifecycle | undefined
  network: SandboxCreateNetwork | undefined
  secure: boolean | undefined
}

/** The manager's options, checked and with every default filled in. */
export interface ResolvedOptions {
  store: SessionStore
  provider: SandboxProvider
  onTurnEnd: OnTurnEnd
  idleTimeoutMs: number
  sandbox: ResolvedSandboxOptions
  healthChecks: HealthCheck[]
  fidelityProbes: boolean
  bootstrap: SessionManagerOptions['bootstrap']
  rehydrate: 'journal' | 'none'
  leaseMs: number
  ttlMs: number
  createWaitMs: number
  retry: RetryPolicy
  /** Per-turn checkpoints, or null when off. */
  checkpoints: ResolvedCheckpoints | null
}

/** Per-tenant checkpoint limits, checked; `Infinity` where none was given. */
export interface TenantLimits {
  /** Most snapshots in the tenant's ledger. */
  snapshots: number
  /** Most bytes the tenant's snapshots may add up to (as their providers reported them). */
  maxSnapshotBytes: number
}

/** The `checkpoints` option, checked. */
export interface ResolvedCheckpoints {
  /** Checkpoints kept per session. */
  keep: number
  /** The provider takes platform snapshots (else a checkpoint is the journal's position alone). */
  snapshots: boolean
  /** Per-tenant limits on kept checkpoint snapshots; `null` when none. */
  tenantLimits: TenantLimits | null
}

/**
 * Checks the options of createSessionManager and fills in the defaults. No I/O.
 * @throws SandkeepError INVALID_ARGUMENT on bad options, CAPABILITY_UNSUPPORTED when `onTurnEnd` needs a
 *   provider capability that is missing.
 */
export function resolveOptions(options: SessionManagerOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('createSessionManager', 'needs an options object.')
  rejectUnknownOptions('createSessionManager', options, SESSION_MANAGER_OPTION_NAMES)
  const { store, provider } = options
  if (store?.specificationVersion !== 'v1' || typeof store.acquire !== 'function') {
    throw invalidArgument(
      'options.store',
      "must be a SessionStore with specificationVersion 'v1' (createMemorySessionStore, createRedisSessionStore).",
    )
  }
  if (provider?.specificationVersion !== 'v1' || typeof provider.connect !== 'function') {
    throw invalidArgument(
      'options.provider',
      "must be a SandboxProvider with specificationVersion 'v1' (createE2BProvider).",
    )
  }
  const onTurnEnd = resolveOnTurnEnd(options.onTurnEnd, provider)
  const rehydrate = options.rehydrate ?? 'journal'
  if (rehydrate !== 'journal' && rehydrate !== 'none')
    throw invalidArgument('options.rehydrate', "must be 'journal' or 'none'.")
  // speculativeConnect is still checked, so a value refused before is refused now, but has no effect.
  for (const name of ['fidelityProbes', 'speculativeConnect'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean')
      throw invalidArgument(`options.${name}`, 'must be a boolean.')
  }
  return {
    store,
    provider,
    onTurnEnd,
    idleTimeoutMs: validateInteger('idleTimeoutMs', options.idleTimeoutMs ?? 60_000, 1000, DAY_MS),
    sandbox: resolveSandboxOptions(options.sandbox, provider, onTurnEnd),
    healthChecks: validateHealthChecks(options.healthChecks),
    fidelityProbes: options.fidelityProbes ?? true,
    bootstrap: validateBootstrap(options.bootstrap),
    rehydrate,
    leaseMs: validateInteger('leaseMs', options.leaseMs ?? 30_000, 300, DAY_MS),
    ttlMs: validateInteger('ttlMs', options.ttlMs ?? 30 * DAY_MS, 1000, 3650 * DAY_MS),
    createWaitMs: validateInteger('createWaitMs', options.createWaitMs ?? 60_000, 0, DAY_MS),
    retry: resolveRetry(options.retry ?? {}),
    checkpoints: resolveCheckpoints(options.checkpoints, store, provider),
  }
}

function resolveCheckpoints(
  value: SessionManagerOptions['checkpoints'],
  store: SessionStore,
  provider: SandboxProvider,
): ResolvedCheckpoints | null {
  if (value === undefined || value === false) return null
  if (typeof value !== 'object' || value === null)
    throw invalidArgument('options.checkpoints', "must be false or { every: 'turn', keep? }.")
  rejectUnknownOptions('options.checkpoints', value, CHECKPOINT_OPTION_NAMES)
  if (value.every !== 'turn') throw invalidArgument('options.checkpoints.every', "must be 'turn'.")
  const keep = validateInteger('checkpoints.keep', value.keep ?? 10, 1, 1000)
  if (!storeHasCheckpoints(store)) {
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message: `Store '${store.storeId}' keeps no checkpoints (readCheckpoints, rewind, createFork), which the checkpoints option needs.`,
    })
  }
  const tenantLimits = resolveTenantLimits(value.tenantLimits)
  if (tenantLimits && tenantLimits.maxSnapshotBytes !== Number.POSITIVE_INFINITY && !storeHasLedger(store)) {
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message: `Store '${store.storeId}' keeps no tenant snapshot ledger (noteTenantSnapshot, forgetTenantSnapshots, readTenantSnapshotUsage), which checkpoints.tenantLimits.maxSnapshotBytes needs.`,
    })
  }
  return { keep, snapshots: providerHasSnapshots(provider), tenantLimits }
}

/** The store keeps the tenant snapshot ledger the per-tenant limits read. */
function storeHasLedger(store: SessionStore): boolean {
  return (
    typeof store.noteTenantSnapshot === 'function' &&
    typeof store.forgetTenantSnapshots === 'function' &&
    typeof store.readTenantSnapshotUsage === 'function'
  )
}

function resolveTenantLimits(value: CheckpointsOption['tenantLimits']): ResolvedCheckpoints['tenantLimits'] {
  if (value === undefined) return null
  if (typeof value !== 'object' || value === null)
    throw invalidArgument('options.checkpoints.tenantLimits', 'must be { snapshots?, maxSnapshotBytes? }.')
  rejectUnknownOptions('options.checkpoints.tenantLimits', value, ['snapshots', 'maxSnapshotBytes'])
  if (value.snapshots === undefined && value.maxSnapshotBytes === undefined) return null
  return {
    snapshots:
      value.snapshots === undefined
        ? Number.POSITIVE_INFINITY
        : validateInteger('checkpoints.tenantLimits.snapshots', value.snapshots, 0, 1_000_000_000),
    maxSnapshotBytes:
      value.maxSnapshotBytes === undefined
        ? Number.POSITIVE_INFINITY
        : validateInteger(
            'checkpoints.tenantLimits.maxSnapshotBytes',
            value.maxSnapshotBytes,
            0,
            Number.MAX_SAFE_INTEGER,
          ),
  }
}

/** The store methods checkpoints, rewind and fork use. */
export function storeHasCheckpoints(
  store: SessionStore,
): store is SessionStore & Required<Pick<SessionStore, 'readCheckpoints' | 'rewind' | 'createFork'>> {
  return (
    typeof store.readCheckpoints === 'function' &&
    typeof store.rewind === 'function' &&
    typeof store.createFork === 'function'
  )
}

/** The provider's snapshot capability, whole (a part of it is not used). */
export function providerHasSnapshots(
  provider: SandboxProvider,
): provider is SandboxProvider &
  Required<
    Pick<SandboxProvider, 'snapshotKeeps' | 'createSnapshot' | 'createFromSnapshot' | 'deleteSnapshot'>
  > {
  return (
    typeof provider.snapshotKeeps === 'object' &&
    provider.snapshotKeeps !== null &&
    typeof provider.createSnapshot === 'function' &&
    typeof provider.createFromSnapshot === 'function' &&
    typeof provider.deleteSnapshot === 'function'
  )
}

function resolveOnTurnEnd(value: OnTurnEnd | undefined, provider: SandboxProvider): OnTurnEnd {
  const onTurnEnd = value ?? 'pause'
  if (!ON_TURN_END.includes(onTurnEnd)) {
    throw invalidArgument(
      'onTurnEnd',
      `must be one of ${ON_TURN_END.join(', ')}, got ${JSON.stringify(onTurnEnd)}.`,
    )
  }
  if (onTurnEnd === 'pause' && typeof provider.pause !== 'function') {
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message: `Provider '${provider.providerId}' cannot pause: use onTurnEnd 'keep', 'kill' or 'auto-pause'.`,
    })
  }
  if (onTurnEnd === 'auto-pause' && typeof provider.setTimeout !== 'function') {
    throw new SandkeepError({
      code: 'CAPABILITY_UNSUPPORTED',
      message: `Provider '${provider.providerId}' cannot set a sandbox timeout, which auto-pause needs: use onTurnEnd 'pause' or 'keep'.`,
    })
  }
  return onTurnEnd
}

function resolveSandboxOptions(
  value: SessionManagerOptions['sandbox'],
  provider: SandboxProvider,
  onTurnEnd: OnTurnEnd,
): ResolvedSandboxOptions {
  const sandbox = value ?? {}
  if (typeof sandbox !== 'object' || sandbox === null)
    throw invalidArgument('options.sandbox', 'must be an object.')
  rejectUnknownOptions('options.sandbox', sandbox, SANDBOX_OPTION_NAMES)
  const metadata = stringRecord('options.sandbox.metadata', sandbox.metadata) ?? {}
  for (const key of Object.values(SANDKEEP_METADATA)) {
    if (key in metadata)
      throw invalidArgument('options.sandbox.metadata', `may not set '${key}': sandkeep writes it.`)
  }
  if (sandbox.allowInternetAccess !== undefined && typeof sandbox.allowInternetAccess !== 'boolean') {
    throw invalidArgument('options.sandbox.allowInternetAccess', 'must be a boolean.')
  }
  if (sandbox.template !== undefined && (typeof sandbox.template !== 'string' || !sandbox.template)) {
    throw invalidArgument('options.sandbox.template', 'must be a non-empty string.')
  }
  return {
    template: sandbox.template ?? provider.defaultTemplate,
    timeoutMs: validateInteger('sandbox.timeoutMs', sandbox.timeoutMs ?? 600_000, 1000, DAY_MS),
    metadata,
    envs: stringRecord('options.sandbox.envs', sandbox.envs),
    allowInternetAccess: sandbox.allowInternetAccess ?? false,
    lifecycle: resolveLifecycle(sandbox.lifecycle, provider, onTurnEnd),
    network: resolveNetwork(sandbox.network, provider),
    secure: resolveSecure(sandbox.secure, provider),
  }
}

/** @throws SandkeepError CAPABILITY_UNSUPPORTED when an option is given that the provider does not honour. */
function requireCapability(provider: SandboxProvider, capability: CreateCapability): void {
  if (provider.createCapabilities?.includes(capability)) return
  throw new SandkeepError({
    code: 'CAPABILITY_UNSUPPORTED',
    message: `Provider '${provider.providerId}' does not honour the create option '${capability}' (its createCapabilities: ${(provider.createCapabilities ?? []).join(', ') || 'none'}): leave options.sandbox.${capability} out or use a provider that has it.`,
  })
}

function resolveLifecycle(
  value: SandboxLifecycle | undefined,
  provider: SandboxProvider,
  onTurnEnd: OnTurnEnd,
): SandboxLifecycle | undefined {
  if (value === undefined) {
    if (onTurnEnd === 'auto-pause') return { onTimeout: 'pause', autoResume: true }
    // The safety net: a turn that never reaches its end (a crash, a serverless function cut short) leaves the
    // sandbox running until its timeout; pausing then keeps what a kill would lose. Only where honoured, so a
    // provider without the capability is not refused for an option nobody asked for.
    if (onTurnEnd === 'kill' || !provider.createCapabilities?.includes('lifecycle')) return undefined
    return { onTimeout: 'pause', autoResume: false }
  }
  if (typeof value !== 'object' || value === null)
    throw invalidArgument(
      'options.sandbox.lifecycle',
      "must be { onTimeout: 'pause' | 'kill', autoResume? }.",
    )
  rejectUnknownOptions('options.sandbox.lifecycle', value, LIFECYCLE_NAMES)
  if (value.onTimeout !== 'pause' && value.onTimeout !== 'kill')
    throw invalidArgument('options.sandbox.lifecycle.onTimeout', "must be 'pause' or 'kill'.")
  if (value.autoResume !== undefined && typeof value.autoResume !== 'boolean')
    throw invalidArgument('options.sandbox.lifecycle.autoResume', 'must be a boolean.')
  if (value.autoResume && value.onTimeout !== 'pause')
    throw invalidArgument('options.sandbox.lifecycle.autoResume', "needs onTimeout: 'pause'.")
  if (onTurnEnd === 'auto-pause' && value.onTimeout !== 'pause') {
    throw invalidArgument(
      'options.sandbox.lifecycle.onTimeout',
      "must be 'pause' with onTurnEnd 'auto-pause' (the platform's pause at the idle timeout is the turn end).",
    )
  }
  requireCapability(provider, 'lifecycle')
  return { onTimeout: value.onTimeout, autoResume: value.autoResume ?? false }
}

function resolveNetwork(
  value: SandboxCreateNetwork | undefined,
  provider: SandboxProvider,
): SandboxCreateNetwork | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidArgument('options.sandbox.network', 'must be an object.')
  rejectUnknownOptions('options.sandbox.network', value, NETWORK_NAMES)
  const { allowPublicTraffic, maskRequestHost, ...egress } = value
  validateNetworkPolicy(egress)
  if (allowPublicTraffic !== undefined && typeof allowPublicTraffic !== 'boolean')
    throw invalidArgument('options.sandbox.network.allowPublicTraffic', 'must be a boolean.')
  if (
    maskRequestHost !== undefined &&
    (typeof maskRequestHost !== 'string' ||
      maskRequestHost.length === 0 ||
      maskRequestHost.length > 253 ||
      !/^[\x21-\x7e]+$/.test(maskRequestHost))
  ) {
    throw invalidArgument(
      'options.sandbox.network.maskRequestHost',
      'must be a host name of printable characters (up to 253), e.g. "${PORT}-app.example.com".',
    )
  }
  requireCapability(provider, 'network')
  return {
    ...(allowPublicTraffic !== undefined ? { allowPublicTraffic } : {}),
    ...(egress.allowOut ? { allowOut: [...egress.allowOut] } : {}),
    ...(egress.denyOut ? { denyOut: [...egress.denyOut] } : {}),
    ...(maskRequestHost !== undefined ? { maskRequestHost } : {}),
  }
}

function resolveSecure(value: boolean | undefined, provider: SandboxProvider): boolean | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'boolean') throw invalidArgument('options.sandbox.secure', 'must be a boolean.')
  requireCapability(provider, 'secure')
  return value
}

function stringRecord(name: string, value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidArgument(name, 'must be an object of strings.')
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string') throw invalidArgument(`${name}.${key}`, 'must be a string.')
  }
  return value as Record<string, string>
}

function validateHealthChecks(value: SessionManagerOptions['healthChecks']): HealthCheck[] {
  const healthChecks = value ?? []
  if (!Array.isArray(healthChecks))
    throw invalidArgument('options.healthChecks', 'must be an array of checks (processCheck(...), ...).')
  const names = new Set<string>()
  for (const check of healthChecks) {
    if (typeof check !== 'object' || check === null || typeof check.name !== 'string' || !check.name) {
      throw invalidArgument(
        'every health check',
        'needs a name: build them with processCheck, portCheck, codeCheck, fileCheck or customCheck.',
      )
    }
    const param = `health check '${check.name}'`
    if (!CHECK_KINDS.includes(check.kind)) throw invalidArgument(param, 'has an unknown kind.')
    if (names.has(check.name) || BUILT_IN_PROBES.includes(check.name)) {
      throw invalidArgument(
        `health check name '${check.name}'`,
        'is used twice or reserved for a built-in probe.',
      )
    }
    names.add(check.name)
    if (check.timeoutMs !== undefined) validateInteger(`${param} timeoutMs`, check.timeoutMs, 1, 600_000)
  }
  return [...healthChecks]
}

function validateBootstrap(
  bootstrap: SessionManagerOptions['bootstrap'],
): SessionManagerOptions['bootstrap'] {
  if (bootstrap !== undefined && typeof bootstrap !== 'function') {
    if (!Array.isArray(bootstrap))
      throw invalidArgument('options.bootstrap', 'must be an array of journal steps or a function.')
    bootstrap.forEach(validateJournalStep)
  }
  return bootstrap
}

function resolveRetry(retry: Partial<RetryPolicy>): RetryPolicy {
  const { retries, minTimeoutMs, maxTimeoutMs } = DEFAULT_RETRY_POLICY
  return {
    retries: validateInteger('retry.retries', retry.retries ?? retries, 0, 20),
    minTimeoutMs: validateInteger('retry.minTimeoutMs', retry.minTimeoutMs ?? minTimeoutMs, 0, 60_000),
    maxTimeoutMs: validateInteger('retry.maxTimeoutMs', retry.maxTimeoutMs ?? maxTimeoutMs, 0, 600_000),
  }
}

/** A turn's options, checked. */
export interface ParsedTurnOptions {
  tenant: unknown
  signal?: AbortSignal
  /** beginTurn resolves with the lease; the resume waits for first use, or for the prewarm. */
  lazy: boolean
  prewarm: boolean | 'auto'
}

/** @throws SandkeepError INVALID_ARGUMENT */
export function validateTurnOptions(options: TurnOptions | undefined): ParsedTurnOptions {
  if (options === undefined) return { tenant: undefined, lazy: false, prewarm: false }
  if (typeof options !== 'object' || options === null)
    throw invalidArgument('turn options', 'must be an object.')
  rejectUnknownOptions('turn options', options, TURN_OPTION_NAMES)
  if (options.lazy !== undefined && typeof options.lazy !== 'boolean')
    throw invalidArgument('options.lazy', 'must be a boolean.')
  const prewarm = options.prewarm ?? false
  if (prewarm !== true && prewarm !== false && prewarm !== 'auto')
    throw invalidArgument('options.prewarm', "must be true, false or 'auto'.")
  if (prewarm !== false && options.lazy === false) {
    throw invalidArgument(
      'options.prewarm',
      'resumes in the background, so beginTurn resolves before the sandbox is ready: leave out lazy: false.',
    )
  }
  if (options.abortSignal !== undefined && !(options.abortSignal instanceof AbortSignal)) {
    throw invalidArgument('options.abortSignal', 'must be an AbortSignal.')
  }
  return {
    tenant: options.tenant,
    ...(options.abortSignal ? { signal: options.abortSignal } : {}),
    lazy: options.lazy ?? prewarm !== false,
    prewarm,
  }
}

/**
 * The tenant of a `{ tenant }` options argument (getSession, endSession, listSessions).
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function tenantOption(value: { tenant?: string } | undefined): string {
  if (value !== undefined && (typeof value !== 'object' || value === null))
    throw invalidArgument('options', 'must be an object.')
  return validateTenant(value?.tenant)
}
