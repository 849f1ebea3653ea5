import { createHash, randomUUID } from 'node:crypto'
import { SandkeepError } from './errors.js'
import { createEventHub } from './events.js'
import { probeFidelity, type UsedContext, type VerifiedState, writeManifest } from './fidelity.js'
import type { HealthCheck, HealthCheckResult } from './health.js'
import { runDeclaredChecks } from './health-runner.js'
import type { JournalStep } from './journal.js'
import { replaySteps, validateJournalStep } from './rehydrate.js'
import type { ResumeOutcome, ResumeReport, TurnEndReport } from './report.js'
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryProviderCall, sleep, toSandkeepError } from './retry.js'
import type { CreateSandboxOptions, ProcessInfo, SandboxHandle, SandboxProvider } from './sandbox-provider.js'
import type {
  GcResult,
  OnTurnEnd,
  SessionManager,
  SessionManagerEvents,
  SessionManagerOptions,
  Turn,
  TurnJournal,
  TurnOptions,
} from './session-manager-types.js'
import type {
  AcquireResult,
  Lease,
  SessionRecord,
  SessionSandboxState,
  SessionStore,
  TurnManifest,
} from './session-store.js'
import { createManagerTelemetry } from './telemetry/index.js'
import {
  type SessionKey,
  validateInteger,
  validateSandboxId,
  validateSessionKey,
  validateTenant,
} from './validation.js'
import { SANDKEEP_VERSION } from './version.js'

/** Metadata keys sandkeep writes on every sandbox it creates. */
export const SANDKEEP_METADATA = {
  /** The tenant that owns the sandbox; a sandbox naming another tenant is never used. */
  tenant: 'sandkeep.tenant',
  /** A hash of the conversation id (the id itself may be personal data; it never leaves the store). */
  session: 'sandkeep.session',
  /** The sandkeep version that created the sandbox. */
  version: 'sandkeep.version',
} as const

/** Hash of a conversation id as written to `sandkeep.session` metadata: sha256, hex, first 32 characters. */
export function hashConversationId(conversationId: string): string {
  return createHash('sha256').update(conversationId).digest('hex').slice(0, 32)
}

const KNOWN_OPTIONS = new Set([
  'store',
  'provider',
  'onTurnEnd',
  'idleTimeoutMs',
  'sandbox',
  'healthChecks',
  'fidelityProbes',
  'speculativeConnect',
  'bootstrap',
  'rehydrate',
  'leaseMs',
  'ttlMs',
  'createWaitMs',
  'retry',
  'telemetry',
])
const KNOWN_SANDBOX_OPTIONS = new Set(['template', 'timeoutMs', 'metadata', 'envs', 'allowInternetAccess'])
const KNOWN_TURN_OPTIONS = new Set(['tenant', 'abortSignal', 'lazy'])
const ON_TURN_END: readonly OnTurnEnd[] = ['pause', 'auto-pause', 'keep', 'kill']
const DAY_MS = 24 * 60 * 60 * 1000
// Tenants verified per sandbox id in this process; bounded so a long-lived server does not grow without end.
const VERIFIED_CACHE_LIMIT = 10_000

/** A connect started before the lease was granted (see `speculate` in createSessionManager). */
interface Speculation {
  sandboxId: string
  turnCount: number
  /** How this process's last turn left the sandbox: what undoing an unused speculation restores. */
  leftAs: TurnEndReport['action']
  retries: number
  result: Promise<{ ok: true; handle: SandboxHandle } | { ok: false; error: unknown }>
}

/** What this process's last turn of a session left: the sandbox, the turn count its release returned, its action. */
interface LastTurn {
  sandboxId: string
  /** -1 when the release found no record (the store lost it): no speculation can be confirmed then. */
  turnCount: number
  leftAs: TurnEndReport['action']
}

/** Sets `key` in a per-process cache, first dropping the oldest entry once it holds VERIFIED_CACHE_LIMIT. */
function setBounded<K, V>(cache: Map<K, V>, key: K, value: V): void {
  if (!cache.has(key) && cache.size >= VERIFIED_CACHE_LIMIT) {
    const oldest = cache.keys().next().value
    if (oldest !== undefined) cache.delete(oldest)
  }
  cache.set(key, value)
}

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

function rejectUnknown(what: string, value: object, known: Set<string>): void {
  for (const key of Object.keys(value)) {
    if (!known.has(key))
      throw invalid(`${what} has an unknown option '${key}'. Known: ${[...known].join(', ')}.`)
  }
}

interface ResolvedOptions {
  store: SessionStore
  provider: SandboxProvider
  onTurnEnd: OnTurnEnd
  idleTimeoutMs: number
  sandbox: {
    template: string | undefined
    timeoutMs: number
    metadata: Record<string, string>
    envs: Record<string, string> | undefined
    allowInternetAccess: boolean
  }
  healthChecks: HealthCheck[]
  fidelityProbes: boolean
  speculativeConnect: boolean
  bootstrap: SessionManagerOptions['bootstrap']
  rehydrate: 'journal' | 'none'
  leaseMs: number
  ttlMs: number
  createWaitMs: number
  retry: RetryPolicy
}

function resolveOptions(options: SessionManagerOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null)
    throw invalid('createSessionManager needs an options object.')
  rejectUnknown('createSessionManager', options, KNOWN_OPTIONS)
  const { store, provider } = options
  if (store?.specificationVersion !== 'v1' || typeof store.acquire !== 'function') {
    throw invalid(
      "options.store must be a SessionStore with specificationVersion 'v1' (createMemorySessionStore, createRedisSessionStore).",
    )
  }
  if (provider?.specificationVersion !== 'v1' || typeof provider.connect !== 'function') {
    throw invalid(
      "options.provider must be a SandboxProvider with specificationVersion 'v1' (createE2BProvider).",
    )
  }
  const onTurnEnd = options.onTurnEnd ?? 'pause'
  if (!ON_TURN_END.includes(onTurnEnd)) {
    throw invalid(`onTurnEnd must be one of ${ON_TURN_END.join(', ')}, got ${JSON.stringify(onTurnEnd)}.`)
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
  const sandbox = options.sandbox ?? {}
  if (typeof sandbox !== 'object' || sandbox === null) throw invalid('options.sandbox must be an object.')
  rejectUnknown('options.sandbox', sandbox, KNOWN_SANDBOX_OPTIONS)
  const stringRecord = (name: string, value: unknown): Record<string, string> | undefined => {
    if (value === undefined) return undefined
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw invalid(`${name} must be an object of strings.`)
    for (const [k, v] of Object.entries(value)) {
      if (typeof v !== 'string') throw invalid(`${name}.${k} must be a string.`)
    }
    return value as Record<string, string>
  }
  const metadata = stringRecord('options.sandbox.metadata', sandbox.metadata) ?? {}
  for (const key of Object.values(SANDKEEP_METADATA)) {
    if (key in metadata) throw invalid(`options.sandbox.metadata may not set '${key}': sandkeep writes it.`)
  }
  const healthChecks = options.healthChecks ?? []
  if (!Array.isArray(healthChecks))
    throw invalid('options.healthChecks must be an array of checks (processCheck(...), ...).')
  const names = new Set<string>()
  for (const check of healthChecks) {
    if (typeof check !== 'object' || check === null || typeof check.name !== 'string' || !check.name) {
      throw invalid(
        'every health check needs a name: build them with processCheck, portCheck, codeCheck, fileCheck or customCheck.',
      )
    }
    if (!['process', 'port', 'code', 'file', 'custom'].includes(check.kind))
      throw invalid(`health check '${check.name}' has an unknown kind.`)
    if (names.has(check.name) || ['memory', 'filesystem', 'processes'].includes(check.name)) {
      throw invalid(`health check name '${check.name}' is used twice or reserved for a built-in probe.`)
    }
    names.add(check.name)
    if (check.timeoutMs !== undefined)
      validateInteger(`health check '${check.name}' timeoutMs`, check.timeoutMs, 1, 600_000)
  }
  const bootstrap = options.bootstrap
  if (bootstrap !== undefined && typeof bootstrap !== 'function') {
    if (!Array.isArray(bootstrap))
      throw invalid('options.bootstrap must be an array of journal steps or a function.')
    bootstrap.forEach(validateJournalStep)
  }
  const rehydrate = options.rehydrate ?? 'journal'
  if (rehydrate !== 'journal' && rehydrate !== 'none')
    throw invalid("options.rehydrate must be 'journal' or 'none'.")
  if (options.fidelityProbes !== undefined && typeof options.fidelityProbes !== 'boolean') {
    throw invalid('options.fidelityProbes must be a boolean.')
  }
  if (options.speculativeConnect !== undefined && typeof options.speculativeConnect !== 'boolean') {
    throw invalid('options.speculativeConnect must be a boolean.')
  }
  if (sandbox.allowInternetAccess !== undefined && typeof sandbox.allowInternetAccess !== 'boolean') {
    throw invalid('options.sandbox.allowInternetAccess must be a boolean.')
  }
  if (sandbox.template !== undefined && (typeof sandbox.template !== 'string' || !sandbox.template)) {
    throw invalid('options.sandbox.template must be a non-empty string.')
  }
  const retry = options.retry ?? {}
  return {
    store,
    provider,
    onTurnEnd,
    idleTimeoutMs: validateInteger('idleTimeoutMs', options.idleTimeoutMs ?? 60_000, 1000, DAY_MS),
    sandbox: {
      template: sandbox.template ?? provider.defaultTemplate,
      timeoutMs: validateInteger('sandbox.timeoutMs', sandbox.timeoutMs ?? 600_000, 1000, DAY_MS),
      metadata,
      envs: stringRecord('options.sandbox.envs', sandbox.envs),
      allowInternetAccess: sandbox.allowInternetAccess ?? false,
    },
    healthChecks: [...healthChecks],
    fidelityProbes: options.fidelityProbes ?? true,
    speculativeConnect: options.speculativeConnect ?? true,
    bootstrap,
    rehydrate,
    leaseMs: validateInteger('leaseMs', options.leaseMs ?? 30_000, 300, DAY_MS),
    ttlMs: validateInteger('ttlMs', options.ttlMs ?? 30 * DAY_MS, 1000, 3650 * DAY_MS),
    createWaitMs: validateInteger('createWaitMs', options.createWaitMs ?? 60_000, 0, DAY_MS),
    retry: {
      retries: validateInteger('retry.retries', retry.retries ?? DEFAULT_RETRY_POLICY.retries, 0, 20),
      minTimeoutMs: validateInteger(
        'retry.minTimeoutMs',
        retry.minTimeoutMs ?? DEFAULT_RETRY_POLICY.minTimeoutMs,
        0,
        60_000,
      ),
      maxTimeoutMs: validateInteger(
        'retry.maxTimeoutMs',
        retry.maxTimeoutMs ?? DEFAULT_RETRY_POLICY.maxTimeoutMs,
        0,
        600_000,
      ),
    },
  }
}

function validateTurnOptions(options: TurnOptions | undefined): {
  tenant: unknown
  signal?: AbortSignal
  lazy: boolean
} {
  if (options === undefined) return { tenant: undefined, lazy: false }
  if (typeof options !== 'object' || options === null) throw invalid('turn options must be an object.')
  rejectUnknown('turn options', options, KNOWN_TURN_OPTIONS)
  if (options.lazy !== undefined && typeof options.lazy !== 'boolean')
    throw invalid('options.lazy must be a boolean.')
  if (options.abortSignal !== undefined && !(options.abortSignal instanceof AbortSignal)) {
    throw invalid('options.abortSignal must be an AbortSignal.')
  }
  return {
    tenant: options.tenant,
    ...(options.abortSignal ? { signal: options.abortSignal } : {}),
    lazy: options.lazy ?? false,
  }
}

function abortedError(key: SessionKey, reason?: unknown): SandkeepError {
  return new SandkeepError({
    code: 'ABORTED',
    message: 'The turn was aborted by its abort signal before the sandbox was ready.',
    tenant: key.tenant,
    conversationId: key.conversationId,
    ...(reason === undefined ? {} : { cause: reason }),
  })
}

/** A record the store returned whose fields do not hold what they must: never acted on. */
function checkRecord(record: SessionRecord | null, key: SessionKey): SessionRecord | null {
  if (record === null) return null
  const corrupt = (detail: string) =>
    new SandkeepError({
      code: 'STORE_CORRUPT',
      message: `The stored session ${detail}; it was left untouched. Inspect it, or end the session to start over.`,
      tenant: key.tenant,
      conversationId: key.conversationId,
    })
  if (typeof record !== 'object') throw corrupt('is not an object')
  if (record.tenant !== key.tenant || record.conversationId !== key.conversationId) {
    throw corrupt('names another tenant or conversation')
  }
  const count = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
  if (!count(record.turnCount) || !count(record.mappingToken)) throw corrupt('holds a count out of range')
  if (record.sandboxId !== null) {
    try {
      validateSandboxId(record.sandboxId)
    } catch {
      throw corrupt('holds an invalid sandbox id')
    }
  }
  return record
}

/**
 * Creates the session manager: turns that resume a conversation's sandbox, check what survived the pause,
 * repair and rehydrate what did not, and pause it again when the last turn ends. Synchronous; no I/O until the
 * first call.
 * @throws SandkeepError INVALID_ARGUMENT on bad options, CAPABILITY_UNSUPPORTED when `onTurnEnd` needs a
 *   provider capability that is missing.
 */
export function createSessionManager(options: SessionManagerOptions): SessionManager {
  const config = resolveOptions(options)
  const events = createEventHub<SessionManagerEvents>()
  const telemetry = createManagerTelemetry(options.telemetry, events.on)
  const { provider } = config
  const store = telemetry.instrumentStore(config.store)
  const verifiedTenants = new Map<string, string>()
  /**
   * Per session (tenant + conversation id), what this process's last turn left: the sandbox and the turn
   * count its release returned. The next turn of the same conversation connects to that sandbox at the same
   * time as it takes its lease (see {@link Speculation}).
   */
  const lastTurns = new Map<string, LastTurn>()
  const sessionCacheKey = (key: SessionKey) => `${key.tenant}\u0000${key.conversationId}`
  const rememberLastTurn = (key: SessionKey, value: LastTurn | null) => {
    const cacheKey = sessionCacheKey(key)
    lastTurns.delete(cacheKey)
    if (value) setBounded(lastTurns, cacheKey, value)
  }
  /** Turns of this process waiting for another's creation of a session, by session: woken when it may be done. */
  const creationWaiters = new Map<string, Set<() => void>>()
  /** Wakes this process's waiters of a session: a turn here mapped it, or ended (which drops its claim). */
  const wakeCreationWaiters = (key: SessionKey) => {
    const cacheKey = sessionCacheKey(key)
    const waiters = creationWaiters.get(cacheKey)
    creationWaiters.delete(cacheKey)
    for (const wake of waiters ?? []) wake()
  }
  /** Sleeps `ms` before the next creation poll, or less when a turn here wakes the waiters first. */
  const creationPause = async (key: SessionKey, ms: number, signal: AbortSignal): Promise<void> => {
    const cacheKey = sessionCacheKey(key)
    const waiters = creationWaiters.get(cacheKey) ?? new Set<() => void>()
    creationWaiters.set(cacheKey, waiters)
    let wake = () => {}
    const woken = new Promise<void>((resolve) => {
      wake = resolve
    })
    waiters.add(wake)
    const stop = new AbortController()
    try {
      await Promise.race([sleep(ms, AbortSignal.any([signal, stop.signal])), woken])
    } finally {
      stop.abort()
      waiters.delete(wake)
      if (waiters.size === 0 && creationWaiters.get(cacheKey) === waiters) creationWaiters.delete(cacheKey)
    }
  }
  /** Turns of each session live in this process (begun, not ended): an unused speculation is undone at 0. */
  const liveTurns = new Map<string, number>()
  const countLiveTurn = (key: SessionKey, delta: 1 | -1) => {
    const cacheKey = sessionCacheKey(key)
    const count = (liveTurns.get(cacheKey) ?? 0) + delta
    if (count > 0) liveTurns.set(cacheKey, count)
    else liveTurns.delete(cacheKey)
  }

  function emitError(phase: string, error: unknown, key?: SessionKey): void {
    events.emit('error', {
      ...(key ? { conversationId: key.conversationId, tenant: key.tenant } : {}),
      error,
      phase,
    })
  }

  function rememberVerified(sandboxId: string, tenant: string): void {
    setBounded(verifiedTenants, sandboxId, tenant)
  }

  /**
   * Refuses a sandbox whose metadata names another tenant. Read with `getInfo` (no resume) the first time this
   * process meets the sandbox; metadata never changes, so a verified id is remembered.
   */
  async function verifyTenant(
    sandboxId: string,
    key: SessionKey,
    signal: AbortSignal,
    retries: () => void,
  ): Promise<void> {
    if (verifiedTenants.get(sandboxId) === key.tenant) return
    if (typeof provider.getInfo !== 'function') return
    const info = await retryProviderCall(() => provider.getInfo!(sandboxId, { signal }), config.retry, {
      signal,
      onRetry: retries,
    })
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
    rememberVerified(sandboxId, key.tenant)
  }

  function createOptions(key: SessionKey, signal: AbortSignal): CreateSandboxOptions {
    const { sandbox } = config
    return {
      ...(sandbox.template ? { template: sandbox.template } : {}),
      timeoutMs: sandbox.timeoutMs,
      metadata: {
        ...sandbox.metadata,
        [SANDKEEP_METADATA.tenant]: key.tenant,
        [SANDKEEP_METADATA.session]: hashConversationId(key.conversationId),
        [SANDKEEP_METADATA.version]: SANDKEEP_VERSION,
      },
      ...(sandbox.envs ? { envs: sandbox.envs } : {}),
      allowInternetAccess: sandbox.allowInternetAccess,
      ...(config.onTurnEnd === 'auto-pause' ? { lifecycle: { onTimeout: 'pause', autoResume: true } } : {}),
      signal,
    }
  }

  class TurnImpl implements Turn {
    readonly conversationId: string
    readonly tenant: string
    readonly holderId: string
    readonly journal: TurnJournal
    readonly sandbox: SandboxHandle
    report: ResumeReport | undefined
    endReport: TurnEndReport | undefined
    private readonly key: SessionKey
    private readonly controller = new AbortController()
    private lease: Lease
    private readonly acquired: AcquireResult
    private readonly beganAt: number
    private readonly storeMs: number
    private readyPromise: Promise<SandboxHandle> | undefined
    private endPromise: Promise<TurnEndReport> | undefined
    private handle: SandboxHandle | undefined
    private readyAt = 0
    /** When this turn started the sandbox running (the create or connect call), epoch ms; 0 before. */
    private runningSince = 0
    private resumedFromPausedAt: number | null = null
    private ended = false
    private foreign = false
    /** A sandbox this turn asked the provider to connect to: it may be running even if the resume failed. */
    private touched: string | null = null
    private renewTimer: NodeJS.Timeout | undefined
    /** Set when a renewal found the lease gone: every later sandbox call of this turn fails with it. */
    private leaseLost: SandkeepError | undefined
    private detachCallerSignal: (() => void) | undefined
    private readonly contexts: UsedContext[] = []
    private verified: VerifiedState = { contexts: [], marker: false }
    private manifestBase: TurnManifest | null
    /** The process list the resume read from this sandbox (or knew to be empty), for the turn end to reuse. */
    private processesAtResume: readonly ProcessInfo[] | undefined
    /** Set by any call that can change the process list: start, kill, a command, or the SDK object handed out. */
    private processesMayHaveChanged = false
    /** A connect started alongside the lease, used only if the lease's record confirms it. */
    speculation: Speculation | undefined
    /** What this process's last turn of the session left, read before the lease was taken. */
    known: LastTurn | undefined
    /** Set when the store had no record of a session this process had used: its journal and manifest are gone. */
    private sessionLost = false

    constructor(
      key: SessionKey,
      acquired: AcquireResult,
      beganAt: number,
      storeMs: number,
      signal: AbortSignal | undefined,
    ) {
      this.key = key
      this.conversationId = key.conversationId
      this.tenant = key.tenant
      this.acquired = acquired
      this.holderId = acquired.lease.holderId
      this.lease = acquired.lease
      this.beganAt = beganAt
      this.storeMs = storeMs
      this.manifestBase = acquired.record?.manifest ?? null
      this.sandbox = this.createHandle()
      this.journal = {
        record: async (step: JournalStep) => {
          this.assertLive()
          await store.appendJournal(this.key, validateJournalStep(step), { ttlMs: config.ttlMs })
        },
        list: async () => (await store.readJournal(this.key)).map((entry) => entry.step),
      }
      if (signal) {
        if (signal.aborted) this.controller.abort(signal.reason)
        else {
          const onAbort = () => this.controller.abort(signal.reason)
          signal.addEventListener('abort', onAbort, { once: true })
          // A caller's signal may outlive many turns: drop the listener when this turn ends.
          this.detachCallerSignal = () => signal.removeEventListener('abort', onAbort)
        }
      }
      // Renew at a third of the lease so two missed renewals still leave time before it lapses.
      this.renewTimer = setInterval(() => this.renew(), Math.max(100, Math.floor(config.leaseMs / 3)))
      this.renewTimer.unref()
    }

    get signal(): AbortSignal {
      return this.controller.signal
    }

    get started(): boolean {
      return this.report !== undefined
    }

    private renew(): void {
      store.renew(this.key, this.lease, { leaseMs: config.leaseMs, ttlMs: config.ttlMs }).then(
        (lease) => {
          this.lease = lease
        },
        (error: unknown) => {
          // A renewal that crossed the release is expected to find the lease gone.
          if (this.ended) return
          emitError('renew', error, this.key)
          if (SandkeepError.hasCode(error, 'LEASE_LOST')) {
            this.stopRenewal()
            // Another turn may now pause, recreate or remap the sandbox: this turn must stop using it.
            this.leaseLost = new SandkeepError({
              code: 'LEASE_LOST',
              message:
                'This turn lost its lease on the session (it lapsed or was taken over), so it may no longer use the sandbox: end it and begin a new turn.',
              tenant: this.tenant,
              conversationId: this.conversationId,
              cause: error,
            })
            this.controller.abort(this.leaseLost)
          }
        },
      )
    }

    private stopRenewal(): void {
      if (this.renewTimer) clearInterval(this.renewTimer)
      this.renewTimer = undefined
    }

    private assertLive(): void {
      if (this.leaseLost && !this.ended) throw this.leaseLost
      if (this.ended) {
        throw new SandkeepError({
          code: 'TURN_ENDED',
          message: 'This turn has ended; begin a new turn to use the sandbox again.',
          tenant: this.tenant,
          conversationId: this.conversationId,
        })
      }
    }

    private trackContext(language: UsedContext['language'] | undefined, contextId: string | undefined): void {
      const entry = { language: language ?? 'python', contextId: contextId ?? null }
      if (!this.contexts.some((c) => c.language === entry.language && c.contextId === entry.contextId)) {
        this.contexts.push(entry)
      }
    }

    private withSignal<O extends { signal?: AbortSignal }>(options: O | undefined): O {
      const own = options?.signal
      const signal = own ? AbortSignal.any([own, this.controller.signal]) : this.controller.signal
      return { ...(options ?? ({} as O)), signal }
    }

    /** The handle the user gets: resumes a lazy turn on first use, refuses use after the end. */
    private createHandle(): SandboxHandle {
      const turn = this
      const live = async () => {
        turn.assertLive()
        const handle = await turn.ready()
        turn.assertLive()
        return turn.handle ?? handle
      }
      const notReady = (what: string) =>
        new SandkeepError({
          code: 'INVALID_ARGUMENT',
          message: `The sandbox's ${what} is not known until the lazy turn has resumed it: await turn.ready() first.`,
          tenant: turn.tenant,
          conversationId: turn.conversationId,
        })
      // Runs a call on the live handle; a failure is explained (lease lost, sandbox paused) before it is thrown.
      const use = async <T>(work: (handle: SandboxHandle) => Promise<T>): Promise<T> => {
        const handle = await live()
        try {
          return await work(handle)
        } catch (error) {
          throw await turn.explainFailure(error, handle.id)
        }
      }
      const readFile = async (path: string, options?: { format?: 'text' | 'bytes'; signal?: AbortSignal }) =>
        use<string | Uint8Array>((handle) => {
          const merged = turn.withSignal(options)
          return merged.format === 'bytes'
            ? handle.readFile(path, { ...merged, format: 'bytes' })
            : handle.readFile(path, { ...merged, format: 'text' })
        })
      return {
        get id() {
          turn.assertLive()
          if (!turn.handle) throw notReady('id')
          return turn.handle.id
        },
        get providerId() {
          return provider.providerId
        },
        get native() {
          turn.assertLive()
          if (!turn.handle) throw notReady('native SDK object')
          return turn.handle.native
        },
        runCommand: (command, options) =>
          use((handle) => handle.runCommand(command, turn.withSignal(options))),
        startProcess: (command, options) => use((handle) => handle.startProcess(command, options)),
        listProcesses: () => use((handle) => handle.listProcesses()),
        killProcess: (pid) => use((handle) => handle.killProcess(pid)),
        runCode: (code, options) =>
          use((handle) => {
            turn.trackContext(options?.language, options?.contextId)
            return handle.runCode(code, turn.withSignal(options))
          }),
        readFile: readFile as SandboxHandle['readFile'],
        writeFile: (path, data, options) =>
          use((handle) => handle.writeFile(path, data, turn.withSignal(options))),
        listDir: (path, options) => use((handle) => handle.listDir(path, turn.withSignal(options))),
        exists: (path) => use((handle) => handle.exists(path)),
        remove: (path) => use((handle) => handle.remove(path)),
      }
    }

    /**
     * What a failed sandbox call of this turn should say. A lost lease explains any failure. A sandbox that
     * stopped answering (timeout, not found, unavailable) may have been paused by another process: the
     * platform says so only through its info (one call, on this error path only), and then the error says
     * SANDBOX_PAUSED rather than a misleading timeout or not-found.
     */
    private async explainFailure(error: unknown, sandboxId: string): Promise<unknown> {
      if (this.leaseLost) return this.leaseLost
      if (
        typeof provider.getInfo !== 'function' ||
        !(
          SandkeepError.hasCode(error, 'TIMEOUT') ||
          SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND') ||
          SandkeepError.hasCode(error, 'SANDBOX_UNAVAILABLE')
        )
      ) {
        return error
      }
      const info = await provider.getInfo(sandboxId).catch(() => undefined)
      if (info?.state !== 'paused') return error
      return new SandkeepError({
        code: 'SANDBOX_PAUSED',
        message: `Sandbox ${sandboxId} was paused by someone else while this turn was using it (another process ended its turn, or this turn's lease lapsed); it still exists. End this turn and begin a new one, which resumes it.`,
        tenant: this.tenant,
        conversationId: this.conversationId,
        sandboxId,
        cause: error,
      })
    }

    ready(): Promise<SandboxHandle> {
      if (this.ended) {
        return Promise.reject(
          new SandkeepError({
            code: 'TURN_ENDED',
            message: 'This turn has ended.',
            tenant: this.tenant,
            conversationId: this.conversationId,
          }),
        )
      }
      this.readyPromise ??= this.tracedResume().then(
        () => this.sandbox,
        (error: unknown) => {
          const failure = this.leaseLost ?? toSandkeepError(error, this.controller.signal)
          // Never pause, kill or otherwise touch another tenant's sandbox at the end of this turn.
          if (failure.code === 'TENANT_MISMATCH') this.foreign = true
          emitError('resume', failure, this.key)
          throw failure
        },
      )
      return this.readyPromise
    }

    /** The resume inside its `sandkeep.resume` span (a plain call when tracing is off). */
    private tracedResume(): Promise<void> {
      return telemetry.tracer.resume(this, () => this.resume())
    }

    /**
     * The speculative connect, when the record the lease returned proves it was the right call: the same
     * sandbox is mapped, no other turn ended since this process's last one (same turn count) and no other
     * turn holds the session now. Otherwise the turn connects as usual after the lease; a speculative
     * connect that turned out wrong only resumed a sandbox this session maps, or one that is gone.
     */
    private confirmedSpeculation(mapped: string, record: SessionRecord | null): Speculation | undefined {
      const speculation = this.speculation
      // An unconfirmed one stays for the turn end to settle (see settleSpeculation).
      if (!speculation || !record) return undefined
      if (speculation.sandboxId !== mapped || speculation.turnCount !== record.turnCount) return undefined
      if (this.acquired.holders > 1) return undefined
      this.speculation = undefined
      return speculation
    }

    /**
     * A speculative connect this turn did not use resumed a sandbox (or pushed its timeout out) without a
     * lease's say-so. Decided after the release: the session's sandbox is left to the last holder's end (as
     * if this turn had touched it); one the session no longer maps is put back as this process left it; with
     * no answer from the store, so is one that no other turn of this process holds.
     */
    private async settleSpeculation(
      handle: SandboxHandle | undefined,
      released: boolean,
      last: boolean,
      record: SessionRecord | null,
    ): Promise<void> {
      const speculation = this.speculation
      this.speculation = undefined
      if (!speculation) return
      const settled = await speculation.result
      if (!settled.ok || settled.handle.id === handle?.id) return
      const sandboxId = settled.handle.id
      if (released && record?.sandboxId === sandboxId) {
        if (last) this.touched = sandboxId
        return
      }
      if (released || !liveTurns.has(sessionCacheKey(this.key)))
        await undoSpeculation(settled.handle.id, speculation, this.key)
    }

    private async resume(): Promise<void> {
      const signal = this.controller.signal
      if (signal.aborted) throw abortedError(this.key, signal.reason)
      const resumeStarted = performance.now()
      let retries = 0
      const onRetry = () => {
        retries++
      }
      const call = <T>(operation: () => Promise<T>) =>
        retryProviderCall(operation, config.retry, { signal, onRetry })
      let record = checkRecord(this.acquired.record, this.key)
      let create = this.acquired.create
      if (!create && !record?.sandboxId) {
        const claimed = await this.waitForCreation()
        record = claimed.record
        create = claimed.create
      }
      let outcome: ResumeOutcome
      let handle: SandboxHandle
      let previousSandboxId: string | undefined
      const connectStarted = performance.now()
      // The sandbox runs (and costs) from the resume call on, not only once it is ready.
      this.runningSince = Date.now()
      const mapped = record?.sandboxId ?? null
      const lost = record === null && create ? await this.adoptLostSession(call) : null
      if (lost) {
        outcome = 'resumed'
        handle = lost
      } else if (create || !mapped) {
        outcome = 'created'
        handle = await this.createAndMap(null, call)
      } else {
        let connected: SandboxHandle | undefined
        if (record?.state !== 'killed') {
          const speculated = this.confirmedSpeculation(mapped, record)
          try {
            if (speculated) {
              this.touched = mapped
              const settled = await speculated.result
              retries += speculated.retries
              if (!settled.ok) throw settled.error
              connected = settled.handle
            } else {
              await verifyTenant(mapped, this.key, signal, onRetry)
              this.touched = mapped
              connected = await call(() =>
                provider.connect(mapped, { timeoutMs: config.sandbox.timeoutMs, signal }),
              )
            }
          } catch (error) {
            if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
          }
        }
        if (!connected) {
          outcome = 'recreated'
          previousSandboxId = mapped
          handle = await this.createAndMap(mapped, call)
        } else {
          handle = connected
          outcome = record?.state === 'paused' && this.acquired.holders <= 1 ? 'resumed' : 'reconnected'
          // Only the turn that found nobody holding the session ended the pause; one that joined it must not
          // count the same pause again.
          if (outcome === 'resumed' && record?.pausedAt != null) this.resumedFromPausedAt = record.pausedAt
          if (handle.id !== mapped) {
            // The platform re-mapped the sandbox (seen after repeated pause/resume): check and record the new id.
            await verifyTenant(handle.id, this.key, signal, onRetry)
            try {
              await store.setSandbox(this.key, this.lease, {
                sandboxId: handle.id,
                expectedSandboxId: mapped,
                providerId: provider.providerId,
                template: record?.template ?? config.sandbox.template ?? null,
                state: 'running',
                ttlMs: config.ttlMs,
              })
            } catch (error) {
              // An overlapping turn recorded the same re-mapping first: nothing left to do.
              const now = SandkeepError.hasCode(error, 'LEASE_LOST') ? await store.get(this.key) : null
              if (now?.sandboxId !== handle.id) throw error
            }
            previousSandboxId = mapped
          }
        }
      }
      const connectMs = performance.now() - connectStarted
      // The built-in declared probes only read (a port probe's command leaves no process behind).
      const probeHandle = handle
      handle = this.watchProcessCalls(handle)
      this.handle = handle

      // A sandbox another turn (re)created meanwhile is that turn's to bootstrap and rehydrate.
      const fresh = (outcome === 'created' || outcome === 'recreated') && !this.adopted
      let rehydrateMs = 0
      let rehydratedSteps = 0
      let stateLost = outcome === 'recreated' || this.sessionLost
      const checks: HealthCheckResult[] = []
      let survived: ResumeReport['survived'] =
        outcome === 'recreated'
          ? { memory: false, filesystem: false, processes: false }
          : { memory: null, filesystem: null, processes: null }
      const healthStarted = performance.now()
      let processList: ProcessInfo[] | undefined
      let processesRestarted = false
      if (outcome === 'created' || outcome === 'recreated') this.manifestBase = null
      if (fresh) {
        const started = performance.now()
        await this.runBootstrap(handle, signal)
        if (config.rehydrate === 'journal')
          rehydratedSteps = await this.replayJournal(handle, outcome === 'created' ? 'created' : 'recreated')
        rehydrateMs += performance.now() - started
      } else if (
        config.fidelityProbes &&
        record?.manifest &&
        outcome !== 'created' &&
        outcome !== 'recreated'
      ) {
        const fidelity = await probeFidelity(handle, record.manifest, signal, config.retry)
        survived = fidelity.survived
        // What the turn end need not write again: sentinels and the marker found intact, and the process
        // list (read now, or known empty: none was recorded for this very sandbox and none can appear alone).
        this.verified = { contexts: fidelity.keptContexts, marker: fidelity.survived.filesystem === true }
        this.processesAtResume =
          fidelity.processList ??
          (record.manifest.sandboxId === handle.id && record.manifest.processes?.length === 0
            ? []
            : undefined)
        processList = fidelity.processList
        processesRestarted = fidelity.processesRestarted
        const lost = fidelity.survived.memory === false || fidelity.survived.filesystem === false
        if (lost) {
          stateLost = true
          if (config.rehydrate === 'journal') {
            const started = performance.now()
            // Files survived: commands and file writes left their effects on disk, so only code runs again.
            const codeOnly = fidelity.survived.filesystem === true
            rehydratedSteps = await this.replayJournal(
              handle,
              fidelity.survived.memory === false ? 'memory-lost' : 'filesystem-lost',
              codeOnly,
            )
            rehydrateMs += performance.now() - started
            const memory = fidelity.checks.find((c) => c.name === 'memory')
            if (memory && memory.status === 'failed' && rehydratedSteps > 0) {
              memory.status = 'repaired'
              memory.repairMs = performance.now() - started
              memory.message = `${memory.message}; rehydrated from the journal (${rehydratedSteps} steps)`
            }
          }
        }
        checks.push(...fidelity.checks)
      }
      if (outcome === 'created') {
        // A brand-new sandbox has nothing to check yet (bootstrap sets it up); the turn itself starts servers.
        for (const check of config.healthChecks) {
          checks.push({
            name: check.name,
            kind: check.kind,
            status: 'skipped',
            required: check.required === true,
            probeMs: 0,
            message: 'new sandbox: nothing to check yet',
          })
        }
      } else if (config.healthChecks.length > 0) {
        checks.push(
          ...(await runDeclaredChecks(
            handle,
            config.healthChecks,
            signal,
            processList,
            processesRestarted,
            probeHandle,
          )),
        )
      }
      const healthMs = performance.now() - healthStarted - rehydrateMs
      for (const result of checks) {
        events.emit('health-check', {
          conversationId: this.conversationId,
          tenant: this.tenant,
          sandboxId: handle.id,
          result,
        })
      }
      this.readyAt = Date.now()
      const report: ResumeReport = {
        conversationId: this.conversationId,
        tenant: this.tenant,
        sandboxId: handle.id,
        ...(previousSandboxId !== undefined ? { previousSandboxId } : {}),
        outcome,
        timings: {
          storeMs: this.storeMs,
          connectMs,
          healthMs: Math.max(0, healthMs),
          rehydrateMs,
          // A lazy turn counts from its first use; an eager one from beginTurn.
          totalMs: performance.now() - (this.lazyStart ? resumeStarted : this.beganAt),
        },
        survived,
        checks,
        stateLost,
        retries,
        rehydratedSteps,
      }
      this.report = report
      events.emit('resume-end', { conversationId: this.conversationId, tenant: this.tenant, report })
      const failed = checks.filter((c) => c.required && c.status === 'failed')
      if (failed.length > 0) {
        throw new SandkeepError({
          code: 'HEALTH_CHECK_FAILED',
          message: `Required health check(s) ${failed.map((c) => `'${c.name}' (${c.message ?? 'failed'})`).join(', ')} still failed after repair.`,
          tenant: this.tenant,
          conversationId: this.conversationId,
          sandboxId: handle.id,
        })
      }
    }

    /**
     * The provider's handle, noting the calls that can change its process list (whoever makes them: the
     * user, a repair, a journal replay). Methods run bound to the provider's own object. A method the
     * handle holds frozen (non-configurable, read-only) must be returned as is: reading one that can change
     * the list then counts as a change.
     */
    private watchProcessCalls(handle: SandboxHandle): SandboxHandle {
      const turn = this
      const changing = new Set<PropertyKey>(['startProcess', 'killProcess', 'runCommand'])
      return new Proxy(handle, {
        get(target, property) {
          const value: unknown = Reflect.get(target, property, target)
          if (property === 'native') turn.processesMayHaveChanged = true
          if (typeof value !== 'function') return value
          const own = Reflect.getOwnPropertyDescriptor(target, property)
          const frozen = own !== undefined && !own.configurable && !own.writable
          if (!changing.has(property)) return frozen ? value : value.bind(target)
          if (frozen) {
            turn.processesMayHaveChanged = true
            return value
          }
          return (...args: unknown[]) => {
            turn.processesMayHaveChanged = true
            return value.apply(target, args)
          }
        },
      })
    }

    /** Set by beginTurn for lazy turns, so `totalMs` counts from the first use rather than from beginTurn. */
    lazyStart = false

    private async waitForCreation(): Promise<{ record: SessionRecord | null; create: boolean }> {
      const deadline = Date.now() + config.createWaitMs
      for (let attempt = 0; ; attempt++) {
        const claim = await store.claimCreation(this.key, this.lease)
        const record = checkRecord(claim.record, this.key)
        if (claim.create || record?.sandboxId) return { record, create: claim.create }
        if (Date.now() >= deadline) {
          throw new SandkeepError({
            code: 'SESSION_BUSY',
            message: `Another turn has been creating this conversation's sandbox for over ${config.createWaitMs} ms; try again shortly.`,
            tenant: this.tenant,
            conversationId: this.conversationId,
            retryable: true,
          })
        }
        // Exponential backoff with jitter, capped, so many waiters do not poll the store in step; a turn of
        // this process that maps the session or ends wakes its waiters at once.
        const base = Math.min(25 * 2 ** attempt, 1000)
        await creationPause(
          this.key,
          Math.min(base / 2 + Math.random() * base, Math.max(0, deadline - Date.now())),
          this.controller.signal,
        )
      }
    }

    private async createAndMap(
      expected: string | null,
      call: <T>(operation: () => Promise<T>) => Promise<T>,
    ): Promise<SandboxHandle> {
      const signal = this.controller.signal
      const handle = await call(() => provider.create(createOptions(this.key, signal)))
      rememberVerified(handle.id, this.tenant)
      try {
        await store.setSandbox(this.key, this.lease, {
          sandboxId: handle.id,
          expectedSandboxId: expected,
          providerId: provider.providerId,
          template: config.sandbox.template ?? null,
          state: 'running',
          ttlMs: config.ttlMs,
        })
        wakeCreationWaiters(this.key)
      } catch (error) {
        // Someone else mapped the session first (or our lease lapsed): never leave our sandbox running unmapped.
        await provider
          .kill(handle.id)
          .catch((killError: unknown) => emitError('kill-unmapped', killError, this.key))
        if (!SandkeepError.hasCode(error, 'LEASE_LOST')) throw error
        // An overlapping turn recreated it first: use that one (our lease is still live, or this fails).
        const adopted = await this.adoptMapping(expected, call)
        if (!adopted) throw error
        this.adopted = true
        return adopted
      }
      return handle
    }

    /**
     * The store has no record of a session this process used (it restarted empty, or the record expired): takes
     * over the sandbox the session mapped to, rather than orphaning it and starting with nothing. Adopting keeps
     * the user's files, memory and processes; it is safe because this process created or verified that sandbox
     * for this very tenant and conversation, and the mapping is written under the creation claim, fenced
     * (`expectedSandboxId: null`), so a second process cannot map another sandbox meanwhile. Null when there is
     * nothing to adopt (the sandbox is gone too): the caller creates one. Either way the report says stateLost.
     */
    private async adoptLostSession(
      call: <T>(operation: () => Promise<T>) => Promise<T>,
    ): Promise<SandboxHandle | null> {
      const known = this.known
      if (!known) return null
      this.sessionLost = true
      const signal = this.controller.signal
      let handle: SandboxHandle | undefined
      try {
        const speculation = this.speculation
        if (speculation?.sandboxId === known.sandboxId) {
          this.speculation = undefined
          this.touched = known.sandboxId
          const settled = await speculation.result
          if (!settled.ok) throw settled.error
          handle = settled.handle
        } else {
          await verifyTenant(known.sandboxId, this.key, signal, () => {})
          this.touched = known.sandboxId
          handle = await call(() =>
            provider.connect(known.sandboxId, { timeoutMs: config.sandbox.timeoutMs, signal }),
          )
        }
      } catch (error) {
        if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
        // The platform may have re-mapped it: look for the session's sandbox by the metadata written at creation.
        const found = await this.findSessionSandbox(known.sandboxId, call)
        if (found) {
          this.touched = found
          handle = await call(() => provider.connect(found, { timeoutMs: config.sandbox.timeoutMs, signal }))
        }
      }
      events.emit('session-lost', {
        conversationId: this.conversationId,
        tenant: this.tenant,
        sandboxId: known.sandboxId,
        adopted: handle !== undefined,
      })
      if (!handle) return null
      this.touched = handle.id
      await store.setSandbox(this.key, this.lease, {
        sandboxId: handle.id,
        expectedSandboxId: null,
        providerId: provider.providerId,
        template: config.sandbox.template ?? null,
        state: 'running',
        ttlMs: config.ttlMs,
      })
      wakeCreationWaiters(this.key)
      return handle
    }

    /**
     * A running or paused sandbox other than `gone` whose metadata names this tenant and conversation, via the
     * provider's list capability (undefined without it). The most recently started one when there are several.
     */
    private async findSessionSandbox(
      gone: string,
      call: <T>(operation: () => Promise<T>) => Promise<T>,
    ): Promise<string | undefined> {
      if (typeof provider.list !== 'function') return undefined
      const signal = this.controller.signal
      const page = await call(() =>
        provider.list!({
          metadata: {
            [SANDKEEP_METADATA.tenant]: this.tenant,
            [SANDKEEP_METADATA.session]: hashConversationId(this.conversationId),
          },
          state: ['running', 'paused'],
          signal,
        }),
      )
      const candidates = page.sandboxes
        .filter(
          (info) =>
            info.sandboxId !== gone &&
            info.metadata[SANDKEEP_METADATA.tenant] === this.tenant &&
            info.metadata[SANDKEEP_METADATA.session] === hashConversationId(this.conversationId),
        )
        .sort((a, b) => (b.startedAt?.getTime() ?? 0) - (a.startedAt?.getTime() ?? 0))
      const found = candidates[0]?.sandboxId
      if (found) rememberVerified(found, this.tenant)
      return found
    }

    /** Set when this turn joined a sandbox another turn (re)created meanwhile, instead of its own. */
    private adopted = false

    /** Connects to the sandbox the session maps to now, when it differs from `stale`; null when there is none. */
    private async adoptMapping(
      stale: string | null,
      call: <T>(operation: () => Promise<T>) => Promise<T>,
    ): Promise<SandboxHandle | null> {
      const current = checkRecord(await store.get(this.key), this.key)
      const sandboxId = current?.sandboxId
      if (!sandboxId || sandboxId === stale) return null
      await verifyTenant(sandboxId, this.key, this.controller.signal, () => {})
      const signal = this.controller.signal
      return call(() => provider.connect(sandboxId, { timeoutMs: config.sandbox.timeoutMs, signal }))
    }

    private async runBootstrap(handle: SandboxHandle, signal: AbortSignal): Promise<void> {
      const bootstrap = config.bootstrap
      if (bootstrap === undefined) return
      if (typeof bootstrap === 'function') {
        await bootstrap(handle)
        return
      }
      const outcome = await replaySteps(handle, bootstrap, signal)
      for (const context of outcome.contexts) this.trackContext(context.language, undefined)
    }

    private async replayJournal(
      handle: SandboxHandle,
      reason: 'created' | 'recreated' | 'memory-lost' | 'filesystem-lost',
      codeOnly = false,
    ): Promise<number> {
      const started = performance.now()
      const steps = (await store.readJournal(this.key))
        .map((entry) => entry.step)
        .filter((step) => !codeOnly || step.kind === 'code')
      if (steps.length === 0) return 0
      let done = 0
      try {
        const outcome = await replaySteps(handle, steps, this.controller.signal)
        done = outcome.steps
        for (const context of outcome.contexts) this.trackContext(context.language, undefined)
      } catch (error) {
        // The turn goes on with what could be restored; the report says state was lost and the error event says why.
        if (this.controller.signal.aborted) throw error
        emitError('rehydrate', error, this.key)
      }
      events.emit('rehydrate', {
        conversationId: this.conversationId,
        tenant: this.tenant,
        sandboxId: handle.id,
        steps: done,
        ms: performance.now() - started,
        reason,
      })
      return done
    }

    end(): Promise<TurnEndReport> {
      this.endPromise ??= telemetry.tracer.within(this, () => this.finish())
      return this.endPromise
    }

    [Symbol.asyncDispose](): Promise<void> {
      return this.end().then(() => undefined)
    }

    private async finish(): Promise<TurnEndReport> {
      this.stopRenewal()
      this.detachCallerSignal?.()
      // Wait for a resume in flight so its sandbox is paused too; its failure was already reported.
      if (this.readyPromise) await this.readyPromise.catch(() => undefined)
      this.ended = true
      const workMs = this.readyAt ? Date.now() - this.readyAt : 0
      const signal = new AbortController().signal
      let error: { code: string; message: string } | undefined
      const fail = (phase: string, cause: unknown) => {
        const failure = toSandkeepError(cause)
        error ??= { code: failure.code, message: failure.message }
        emitError(phase, failure, this.key)
      }
      const handle = this.handle
      let manifest: TurnManifest | undefined
      // Nothing since the resume could change the process list: record the one it read instead of listing
      // again, on condition that no other turn (which may have started processes) ended meanwhile.
      const processesAtResume = this.processesMayHaveChanged ? undefined : this.processesAtResume
      if (handle && config.fidelityProbes) {
        try {
          manifest = await writeManifest(
            handle,
            this.contexts,
            this.manifestBase,
            this.verified,
            signal,
            processesAtResume,
          )
        } catch (cause) {
          fail('manifest', cause)
        }
      }
      const onTurnEnd = config.onTurnEnd
      const stateIfLast: SessionSandboxState | undefined = handle
        ? onTurnEnd === 'pause' || onTurnEnd === 'auto-pause'
          ? 'paused'
          : onTurnEnd === 'kill'
            ? 'killed'
            : 'running'
        : undefined
      const now = Date.now()
      const storeStarted = performance.now()
      let last = false
      let released = false
      let record: SessionRecord | null = null
      try {
        const basis = this.acquired.record?.turnCount
        const result = await store.release(this.key, this.lease, {
          ...(manifest ? { manifest } : {}),
          ...(manifest && processesAtResume && basis !== undefined ? { manifestIfTurnCount: basis } : {}),
          turnEndedAt: now,
          // The store counts overlapping turns' running time once, from the earliest start.
          ...(this.handle && this.runningSince ? { runningFrom: this.runningSince } : {}),
          pausedSeconds:
            this.resumedFromPausedAt !== null
              ? Math.max(0, this.runningSince - this.resumedFromPausedAt) / 1000
              : 0,
          ...(stateIfLast ? { stateIfLast } : {}),
          ttlMs: config.ttlMs,
        })
        last = result.last
        record = result.record
        released = true
      } catch (cause) {
        // Without the release we cannot know whether other turns hold the sandbox, so it is not paused: the
        // lease lapses and the platform timeout bounds the cost.
        fail('release', cause)
      }
      countLiveTurn(this.key, -1)
      wakeCreationWaiters(this.key)
      await this.settleSpeculation(handle, released, last, record)
      const storeMs = performance.now() - storeStarted
      const pauseStarted = performance.now()
      let action: TurnEndReport['action'] = 'none'
      const sandboxId = handle?.id ?? record?.sandboxId ?? null
      if (released) {
        if (!last) {
          action = record ? 'left-running-for-other-holders' : 'none'
          if (handle && record && record.state !== 'running') {
            // This turn resumed the sandbox but others still hold it: say it runs, so that whichever turn
            // ends last pauses it even if that turn never touched the sandbox itself.
            await this.recordState('running').catch((e: unknown) => fail('set-state', e))
          }
        } else if (
          sandboxId &&
          !this.foreign &&
          (handle || record?.state === 'running' || this.touched === sandboxId)
        ) {
          action = await this.endSandbox(sandboxId, onTurnEnd, fail, !handle)
        }
      }
      const pauseMs = performance.now() - pauseStarted
      // The next turn here may connect to this sandbox while it takes its lease: only one that still exists.
      const sandboxStays =
        action === 'paused' ||
        action === 'auto-pause' ||
        action === 'kept' ||
        action === 'left-running-for-other-holders'
      // A record gone at the release (the store lost it) is still this sandbox's session: remember it, so the
      // next turn can tell the session was lost and take the sandbox over.
      const mappedHere = released && (record === null || record.sandboxId === handle?.id)
      rememberLastTurn(
        this.key,
        sandboxStays && handle && mappedHere && !this.foreign
          ? { sandboxId: handle.id, turnCount: record?.turnCount ?? -1, leftAs: action }
          : null,
      )
      if (action !== 'none' && action !== 'left-running-for-other-holders' && sandboxId) {
        events.emit('pause-end', {
          conversationId: this.conversationId,
          tenant: this.tenant,
          sandboxId,
          action,
          ms: pauseMs,
        })
      }
      const endReport: TurnEndReport = {
        action,
        last,
        timings: { workMs, storeMs, pauseMs },
        ...(error ? { error } : {}),
      }
      this.endReport = endReport
      this.controller.abort(
        new SandkeepError({
          code: 'TURN_ENDED',
          message: 'The turn ended.',
          tenant: this.tenant,
          conversationId: this.conversationId,
        }),
      )
      events.emit('turn-end', {
        conversationId: this.conversationId,
        tenant: this.tenant,
        report: this.report,
        end: endReport,
      })
      return endReport
    }

    /** Records the sandbox state (`at`: when it took effect, epoch ms), keeping the session for `ttlMs`. */
    private recordState(state: SessionSandboxState, at?: number): Promise<SessionRecord | null> {
      return store.setState(
        this.key,
        state,
        at === undefined ? { ttlMs: config.ttlMs } : { at, ttlMs: config.ttlMs },
      )
    }

    /** The last holder's action on the sandbox. `writeState` when `release` did not record the state. */
    private async endSandbox(
      sandboxId: string,
      onTurnEnd: OnTurnEnd,
      fail: (phase: string, cause: unknown) => void,
      writeState: boolean,
    ): Promise<TurnEndReport['action']> {
      const call = <T>(operation: () => Promise<T>) => retryProviderCall(operation, config.retry)
      try {
        if (onTurnEnd === 'pause') {
          // false means it was already paused: the state we wanted.
          await call(() => provider.pause!(sandboxId))
          if (writeState) await this.recordState('paused')
          return 'paused'
        }
        if (onTurnEnd === 'auto-pause') {
          await call(() => provider.setTimeout!(sandboxId, config.idleTimeoutMs))
          if (writeState) await this.recordState('paused', Date.now() + config.idleTimeoutMs)
          return 'auto-pause'
        }
        if (onTurnEnd === 'kill') {
          await call(() => provider.kill(sandboxId))
          if (writeState) await this.recordState('killed')
          return 'killed'
        }
        return 'kept'
      } catch (cause) {
        if (SandkeepError.hasCode(cause, 'SANDBOX_NOT_FOUND')) {
          // Gone already (killed elsewhere, expired): the next turn recreates it.
          await this.recordState('killed').catch((e: unknown) => fail('set-state', e))
          return 'none'
        }
        fail(onTurnEnd, cause)
        // The state written with the release claimed 'paused'; correct it so the next turn knows.
        await this.recordState('unknown').catch((e: unknown) => fail('set-state', e))
        return 'none'
      }
    }
  }

  /**
   * Starts connecting to the sandbox this process's last turn of the conversation used, while the lease is
   * being taken, so that a turn costs the longer of the two calls rather than both. Only for a sandbox whose
   * tenant was already verified here; the turn uses the result only if the lease confirms it.
   */
  /**
   * Puts the sandbox of an unused speculation back as this process's last turn left it: paused again, or its
   * idle timeout restored (the connect set the sandbox timeout). Errors are reported, not thrown.
   */
  async function undoSpeculation(
    sandboxId: string,
    speculation: Speculation,
    key: SessionKey,
  ): Promise<void> {
    try {
      if (speculation.leftAs === 'paused' && provider.pause) {
        await retryProviderCall(() => provider.pause!(sandboxId), config.retry)
      } else if (speculation.leftAs === 'auto-pause' && provider.setTimeout) {
        await retryProviderCall(() => provider.setTimeout!(sandboxId, config.idleTimeoutMs), config.retry)
      }
    } catch (error) {
      if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) emitError('undo-speculation', error, key)
    }
  }

  function speculate(key: SessionKey, signal: AbortSignal | undefined): Speculation | undefined {
    if (!config.speculativeConnect) return undefined
    const last = lastTurns.get(sessionCacheKey(key))
    if (!last || verifiedTenants.get(last.sandboxId) !== key.tenant) return undefined
    const speculation: Speculation = { ...last, retries: 0, result: undefined as never }
    const connecting = retryProviderCall(
      () =>
        provider.connect(last.sandboxId, {
          timeoutMs: config.sandbox.timeoutMs,
          ...(signal ? { signal } : {}),
        }),
      config.retry,
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

  const beginTurn = (conversationId: string, turnOptions?: TurnOptions): Promise<Turn> =>
    telemetry.tracer.turn(conversationId, turnOptions, () => beginTurnUntraced(conversationId, turnOptions))

  async function beginTurnUntraced(conversationId: string, turnOptions?: TurnOptions): Promise<Turn> {
    const beganAt = performance.now()
    const parsed = validateTurnOptions(turnOptions)
    const key = validateSessionKey(conversationId, parsed.tenant)
    if (parsed.signal?.aborted) throw abortedError(key, parsed.signal.reason)
    const holderId = randomUUID()
    const known = lastTurns.get(sessionCacheKey(key))
    const speculation = parsed.lazy ? undefined : speculate(key, parsed.signal)
    countLiveTurn(key, 1)
    let acquired: AcquireResult
    try {
      acquired = await store.acquire(key, { holderId, leaseMs: config.leaseMs, ttlMs: config.ttlMs })
    } catch (error) {
      countLiveTurn(key, -1)
      // No lease, no record: nothing confirms the speculation. Undo it unless another turn here holds the session.
      if (speculation && !liveTurns.has(sessionCacheKey(key))) {
        const settled = await speculation.result
        if (settled.ok) await undoSpeculation(settled.handle.id, speculation, key)
      }
      throw error
    }
    const storeMs = performance.now() - beganAt
    const turn = new TurnImpl(key, acquired, beganAt, storeMs, parsed.signal)
    turn.speculation = speculation
    turn.known = known
    turn.lazyStart = parsed.lazy
    events.emit('turn-start', {
      conversationId: key.conversationId,
      tenant: key.tenant,
      holderId: turn.holderId,
      lazy: parsed.lazy,
    })
    if (!parsed.lazy) {
      try {
        await turn.ready()
      } catch (error) {
        await turn.end()
        throw error
      }
    }
    return turn
  }

  async function withTurn<T>(
    conversationId: string,
    fn: (turn: Turn) => Promise<T>,
    turnOptions?: TurnOptions,
  ): Promise<T> {
    if (typeof fn !== 'function') throw invalid('withTurn needs a function as its second argument.')
    const turn = await beginTurn(conversationId, turnOptions)
    try {
      return await telemetry.tracer.within(turn, () => fn(turn))
    } finally {
      await turn.end()
    }
  }

  function tenantOption(value: { tenant?: string } | undefined): string {
    if (value !== undefined && (typeof value !== 'object' || value === null))
      throw invalid('options must be an object.')
    return validateTenant(value?.tenant)
  }

  async function endSession(conversationId: string, endOptions?: { tenant?: string }): Promise<boolean> {
    const key = validateSessionKey(conversationId, tenantOption(endOptions))
    rememberLastTurn(key, null)
    const record = checkRecord(await store.get(key), key)
    if (!record) return false
    if (record.sandboxId) {
      const sandboxId = record.sandboxId
      const signal = new AbortController().signal
      try {
        await verifyTenant(sandboxId, key, signal, () => {})
        await retryProviderCall(() => provider.kill(sandboxId), config.retry)
      } catch (error) {
        // A mapping to another tenant's sandbox is wrong: drop it, and leave that sandbox alone.
        if (SandkeepError.hasCode(error, 'TENANT_MISMATCH')) emitError('end-session', error, key)
        else if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
      }
    }
    return store.delete(key)
  }

  async function getSession(
    conversationId: string,
    getOptions?: { tenant?: string },
  ): Promise<SessionRecord | null> {
    const key = validateSessionKey(conversationId, tenantOption(getOptions))
    return store.get(key)
  }

  async function listSessions(listOptions?: { tenant?: string; limit?: number; cursor?: string }) {
    const tenant = tenantOption(listOptions)
    const limit =
      listOptions?.limit === undefined ? undefined : validateInteger('limit', listOptions.limit, 1, 1000)
    const cursor = listOptions?.cursor
    if (cursor !== undefined && typeof cursor !== 'string')
      throw invalid('cursor must be a string from a previous page.')
    return store.list(tenant, { ...(limit ? { limit } : {}), ...(cursor ? { cursor } : {}) })
  }

  async function gc(gcOptions?: { tenant?: string; dryRun?: boolean }): Promise<GcResult> {
    if (gcOptions !== undefined && (typeof gcOptions !== 'object' || gcOptions === null))
      throw invalid('gc options must be an object.')
    const only = gcOptions?.tenant === undefined ? undefined : validateTenant(gcOptions.tenant)
    const dryRun = gcOptions?.dryRun ?? false
    if (typeof provider.list !== 'function') {
      throw new SandkeepError({
        code: 'CAPABILITY_UNSUPPORTED',
        message: `Provider '${provider.providerId}' cannot list sandboxes, which gc needs.`,
      })
    }
    // Every sandbox sandkeep made, found by its metadata.
    const sandboxes: Array<{ sandboxId: string; tenant: string; startedAt?: Date }> = []
    let cursor: string | undefined
    do {
      const page = await retryProviderCall(
        () =>
          provider.list!({
            ...(only ? { metadata: { [SANDKEEP_METADATA.tenant]: only } } : {}),
            state: ['running', 'paused'],
            ...(cursor ? { cursor } : {}),
          }),
        config.retry,
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
    const tenants = only ? [only] : [...new Set([...sandboxes.map((s) => s.tenant), 'default'])]
    const result: GcResult = { killedSandboxes: [], deletedSessions: [] }
    const live = new Set(sandboxes.map((s) => s.sandboxId))
    // A sandbox younger than this may be one whose creator has not mapped it yet.
    const graceMs = config.createWaitMs + config.leaseMs
    for (const tenant of tenants) {
      const mapped = new Set<string>()
      let sessionCursor: string | undefined
      const sessions: SessionRecord[] = []
      do {
        const page = await store.list(tenant, {
          limit: 1000,
          ...(sessionCursor ? { cursor: sessionCursor } : {}),
        })
        sessions.push(...page.sessions)
        sessionCursor = page.cursor
      } while (sessionCursor)
      for (const session of sessions) {
        if (session.sandboxId) mapped.add(session.sandboxId)
      }
      for (const session of sessions) {
        if (!session.sandboxId || live.has(session.sandboxId)) continue
        const key = { tenant: session.tenant, conversationId: session.conversationId }
        // Not in the listing: confirm it is gone before dropping the mapping (the journal goes with it).
        let gone = session.state === 'killed'
        if (!gone && typeof provider.getInfo === 'function') {
          try {
            await provider.getInfo(session.sandboxId)
          } catch (error) {
            if (!SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND')) throw error
            gone = true
          }
        }
        if (!gone) continue
        if (!dryRun) await store.delete(key)
        result.deletedSessions.push(key)
      }
      for (const sandbox of sandboxes) {
        if (sandbox.tenant !== tenant || mapped.has(sandbox.sandboxId)) continue
        if (sandbox.startedAt && Date.now() - sandbox.startedAt.getTime() < graceMs) continue
        if (!dryRun) await retryProviderCall(() => provider.kill(sandbox.sandboxId), config.retry)
        result.killedSandboxes.push(sandbox.sandboxId)
      }
    }
    return result
  }

  return {
    beginTurn,
    withTurn,
    endSession,
    getSession,
    listSessions,
    gc,
    on: (event, listener) => events.on(event, listener),
    store: config.store,
    provider,
  }
}
