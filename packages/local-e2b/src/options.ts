// Options of startLocalE2B, checked before anything is started.
import { readFileSync } from 'node:fs'
import { invalidArgument } from './errors.js'
import { DEFAULT_METRICS_INTERVAL_MS } from './metrics.js'
import type { SandboxUser } from './runtime/etc-files.js'
import { DEFAULT_LIMITS, type SandboxLimits } from './runtime/limits.js'
import { type PauseMode, parsePauseMode } from './sandbox.js'

/** Per-sandbox resource limits; every field optional, defaults in the README's "Security model". */
export interface SandboxLimitsOptions {
  /** Most processes and threads at once (default 512); a fork past it fails with EAGAIN. */
  pids?: number
  /** Memory in bytes (default 1 GiB, E2B's default sandbox); past it the kernel OOM-kills the sandbox's process. */
  memoryBytes?: number
  /** CPU weight from 1 to 10000 (default 100, an equal share with every other sandbox). */
  cpuWeight?: number
  /** Disk for /home/user and /tmp in bytes (default 2 GiB); a write past it fails with ENOSPC. 0: no cap. */
  diskBytes?: number
  /** Size of each private tmpfs, /var/tmp and /dev/shm, in bytes (default 256 MiB). */
  tmpfsBytes?: number
}

/** What one template changes about its sandboxes. */
export interface TemplateOptions {
  /** Who its processes run as (default: the host's `user` option). */
  user?: SandboxUser
  /** Limits over the host's `limits`. */
  limits?: SandboxLimitsOptions
  /**
   * Let its processes create user namespaces of their own (`unshare -U`, rootless containers, browsers'
   * sandboxes). Default false: nested user namespaces are refused inside, one attack surface of the kernel less.
   */
  nestedUserNamespaces?: boolean
}

/** Options of {@link startLocalE2B}. */
export interface LocalE2BOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number
  /** Interface to listen on (default `127.0.0.1`). Non-loopback addresses need `allowRemote: true`. */
  hostname?: string
  /**
   * The domain sandbox ports are named under, E2B's `<port>-<sandboxId>.<domain>`: what create and connect
   * tell the SDK, so `sandbox.getHost(port)` names this host, and what `host.env.E2B_DOMAIN` says (default
   * `localhost:<port>`; `*.localhost` is loopback for browsers and curl). Give another one when a DNS name or
   * a proxy points `*.<domain>` here.
   */
  domain?: string
  /**
   * Directory of the host's own certificate authority (`ca.pem`, made there with openssl when missing, kept
   * for later starts). With it the port speaks TLS as well as plain HTTP, so E2B's `https://` URLs work for
   * clients that trust `<tlsDir>/ca.pem` (Node: NODE_EXTRA_CA_CERTS). Default: plain HTTP only.
   */
  tlsDir?: string
  /** Allow a non-loopback `hostname` (default false: the host runs code for whoever holds the key). */
  allowRemote?: boolean
  /** Directory for the registry and the sandboxes' files (default: a new temp dir, removed by close()). */
  stateDir?: string
  /** API key clients must send as X-API-KEY (default: random, see `host.apiKey`). */
  apiKey?: string
  /** What a pause keeps (default `memory`); a sandbox can override it with metadata `local-e2b/pause-mode`. */
  pauseMode?: PauseMode
  /** A sandbox paused longer than this (ms) is deleted, like hosted deep hibernation (default: kept forever). */
  retentionMs?: number
  /** Most sandboxes running at once (default 100); a create beyond it answers 429 (resumes are not refused). */
  maxSandboxes?: number
  /** Sandbox timeout when create/connect gives none (ms, default 300_000, E2B's default). */
  defaultTimeoutMs?: number
  /**
   * `auto` (default) and `bubblewrap`: bubblewrap, and without it (or without root) startLocalE2B throws
   * CAPABILITY_UNSUPPORTED; `none`: unisolated, with a loud warning (sandbox code runs as this user, here).
   */
  isolation?: 'auto' | 'bubblewrap' | 'none'
  /** Extra template ids accepted by create (besides `base` and the code-interpreter templates). */
  templates?: string[]
  /**
   * Where the host's log lines go (default `console.warn`), each with its level. A line never carries an API
   * key, a token or a header value.
   */
  logger?: (line: string, level: LocalE2BLogLevel) => void
  /**
   * How much the host logs: `warn` (default: problems only), `info` (also each sandbox's lifecycle: create,
   * connect, pause, resume, kill, timeout, fork, snapshot), `debug` (also every request: method, path without
   * its query, status, ms).
   */
  logLevel?: LocalE2BLogLevel
  /**
   * Most connections open at once to one sandbox's own ports (`getHost(port)` traffic: HTTP requests in flight
   * and WebSockets; default 256). One more is answered 429 with E2B's JSON/HTML answer shape.
   */
  maxConnectionsPerSandbox?: number
  /**
   * Most such connections across the host (default 1024, or a quarter of the process's open-file limit when
   * that is lower; each costs the host two file descriptors). One more is answered 503 with Retry-After.
   */
  maxConnections?: number
  /** Most bytes one `/files` upload may carry; past it the host answers 413 and keeps no partial file (default 1 GiB). */
  maxUploadBytes?: number
  /** Most upload bytes in flight across the host; past it uploads get 429 + Retry-After (default 4 GiB). */
  maxConcurrentUploadBytes?: number
  /**
   * Who sandbox processes run as (isolated mode): `user` (default, E2B's unprivileged user, home /home/user)
   * or `root` (uid 0 inside the sandbox, still without any capability).
   */
  user?: SandboxUser
  /** Resource limits of every sandbox (see {@link SandboxLimitsOptions} for the defaults). */
  limits?: SandboxLimitsOptions
  /** Per template id: its user and limits (the ids are accepted by create, like `templates`). */
  templateOptions?: Record<string, TemplateOptions>
  /** Most snapshots kept for the API key (default 100); one more answers 429 until one is deleted. */
  maxSnapshots?: number
  /** Most bytes the kept snapshots may take on the host's disk (default 20 GiB); past it 429. */
  maxSnapshotBytes?: number
  /**
   * How new snapshots are stored: `content` (default) keeps each file's content once across every snapshot and
   * copies only what changed since the sandbox's previous one; `copy` copies the whole disk each time (the
   * format before, kept for comparison). Snapshots of either kind stay readable.
   */
  snapshotStorage?: 'content' | 'copy'
  /** Time between two metrics samples of a running sandbox (ms, default 5000, E2B's; 100 to 60000). */
  metricsIntervalMs?: number
}

/** Levels of the host's log, least to most detailed. */
export type LocalE2BLogLevel = 'warn' | 'info' | 'debug'

/** Options after defaults. */
export interface ResolvedOptions {
  port: number
  hostname: string
  /** The given domain; the host fills in its default (`localhost:<port>`) once it listens. */
  domain: string | undefined
  tlsDir: string | undefined
  allowRemote: boolean
  stateDir: string | undefined
  apiKey: string | undefined
  pauseMode: PauseMode
  retentionMs: number | undefined
  maxSandboxes: number
  defaultTimeoutMs: number
  isolation: 'auto' | 'bubblewrap' | 'none'
  templates: string[]
  logger: (line: string, level?: LocalE2BLogLevel) => void
  logLevel: LocalE2BLogLevel
  maxConnectionsPerSandbox: number
  maxConnections: number
  maxUploadBytes: number
  maxConcurrentUploadBytes: number
  user: SandboxUser
  limits: SandboxLimits
  templateOptions: Record<string, { user: SandboxUser; limits: SandboxLimits; nestedUserNamespaces: boolean }>
  maxSnapshots: number
  maxSnapshotBytes: number
  snapshotStorage: 'content' | 'copy'
  metricsIntervalMs: number
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])

const invalid = invalidArgument

/**
 * Every option name of startLocalE2B, in one list. `satisfies` keeps a name that is not an option out, and
 * `Complete` below fails to compile when an option is added to the type but not here.
 */
const LOCAL_E2B_OPTION_NAMES = [
  'port',
  'hostname',
  'domain',
  'tlsDir',
  'allowRemote',
  'stateDir',
  'apiKey',
  'pauseMode',
  'retentionMs',
  'maxSandboxes',
  'defaultTimeoutMs',
  'isolation',
  'templates',
  'logger',
  'logLevel',
  'maxConnectionsPerSandbox',
  'maxConnections',
  'maxUploadBytes',
  'maxConcurrentUploadBytes',
  'user',
  'limits',
  'templateOptions',
  'maxSnapshots',
  'maxSnapshotBytes',
  'snapshotStorage',
  'metricsIntervalMs',
] as const satisfies readonly (keyof LocalE2BOptions)[]

/** The option names of one template in templateOptions. */
const TEMPLATE_OPTION_NAMES = [
  'user',
  'limits',
  'nestedUserNamespaces',
] as const satisfies readonly (keyof TemplateOptions)[]

/** `true` only when the list names every key of T; anything else is a compile error at the use below. */
type Complete<T, List extends readonly (keyof T)[]> = [Exclude<keyof T, List[number]>] extends [never]
  ? true
  : { missing: Exclude<keyof T, List[number]> }
const optionListsComplete: [
  Complete<LocalE2BOptions, typeof LOCAL_E2B_OPTION_NAMES>,
  Complete<TemplateOptions, typeof TEMPLATE_OPTION_NAMES>,
] = [true, true]
void optionListsComplete

const KNOWN_KEYS: ReadonlySet<string> = new Set(LOCAL_E2B_OPTION_NAMES)
const TEMPLATE_KEYS: ReadonlySet<string> = new Set(TEMPLATE_OPTION_NAMES)

/** Where the host listens; a non-loopback hostname only with allowRemote. */
function resolveAddress(
  options: LocalE2BOptions,
): Pick<ResolvedOptions, 'port' | 'hostname' | 'allowRemote' | 'domain'> {
  const port = options.port ?? 0
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw invalid('port must be an integer from 0 to 65535')
  const hostname = options.hostname ?? '127.0.0.1'
  if (typeof hostname !== 'string' || hostname.length === 0)
    throw invalid('hostname must be a non-empty string')
  const allowRemote = options.allowRemote ?? false
  if (typeof allowRemote !== 'boolean') throw invalid('allowRemote must be a boolean')
  if (!LOOPBACK.has(hostname) && !allowRemote) {
    throw invalid(
      `hostname ${hostname} is not a loopback address; the host runs arbitrary code for API-key holders, pass allowRemote: true to expose it`,
    )
  }
  const domain = options.domain
  // Sandbox ids carry no dot, so `<port>-<id>.` is always the first label; the domain is the rest.
  if (
    domain !== undefined &&
    (typeof domain !== 'string' || !/^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:\d{1,5})?$/.test(domain))
  ) {
    throw invalid('domain must be a host name with an optional :port, such as localhost:3000')
  }
  return { port, hostname, allowRemote, domain }
}

/** stateDir and apiKey have no defaults here; they are only checked when given. */
function checkStateDirAndApiKey(options: LocalE2BOptions): void {
  if (
    options.stateDir !== undefined &&
    (typeof options.stateDir !== 'string' || options.stateDir.length === 0)
  ) {
    throw invalid('stateDir must be a non-empty path')
  }
  if (options.tlsDir !== undefined && (typeof options.tlsDir !== 'string' || options.tlsDir.length === 0)) {
    throw invalid('tlsDir must be a non-empty path')
  }
  if (options.apiKey !== undefined) {
    if (
      typeof options.apiKey !== 'string' ||
      options.apiKey.length < 8 ||
      /[\u0000-\u0020]/.test(options.apiKey)
    ) {
      throw invalid('apiKey must be a string of at least 8 printable characters without spaces')
    }
  }
}

/** Checks and completes the options; throws LocalE2BError INVALID_ARGUMENT before any side effect. */
export function resolveOptions(options: LocalE2BOptions = {}): ResolvedOptions {
  if (typeof options !== 'object' || options === null)
    throw invalid('startLocalE2B options must be an object')
  for (const key of Object.keys(options)) {
    if (!KNOWN_KEYS.has(key)) throw invalid(`startLocalE2B: unknown option "${key}"`)
  }
  const { port, hostname, allowRemote, domain } = resolveAddress(options)
  checkStateDirAndApiKey(options)
  const pauseMode = options.pauseMode === undefined ? 'memory' : parsePauseMode(options.pauseMode)
  if (!pauseMode) throw invalid('pauseMode must be "memory", "filesystem" or "processes"')
  const retentionMs = options.retentionMs
  if (retentionMs !== undefined && (!Number.isFinite(retentionMs) || retentionMs <= 0)) {
    throw invalid('retentionMs must be a positive number of milliseconds')
  }
  const maxSandboxes = options.maxSandboxes ?? 100
  if (!Number.isInteger(maxSandboxes) || maxSandboxes < 1)
    throw invalid('maxSandboxes must be a positive integer')
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 300_000
  if (!Number.isFinite(defaultTimeoutMs) || defaultTimeoutMs < 1000) {
    throw invalid('defaultTimeoutMs must be at least 1000 ms')
  }
  const isolation = options.isolation ?? 'auto'
  if (isolation !== 'auto' && isolation !== 'bubblewrap' && isolation !== 'none') {
    throw invalid('isolation must be "auto", "bubblewrap" or "none"')
  }
  const templates = options.templates ?? []
  if (!Array.isArray(templates) || templates.some((template) => typeof template !== 'string' || !template)) {
    throw invalid('templates must be an array of non-empty strings')
  }
  if (options.logger !== undefined && typeof options.logger !== 'function')
    throw invalid('logger must be a function')
  const logLevel = options.logLevel ?? 'warn'
  if (logLevel !== 'warn' && logLevel !== 'info' && logLevel !== 'debug')
    throw invalid('logLevel must be "warn", "info" or "debug"')
  const { maxConnectionsPerSandbox, maxConnections } = resolveConnectionLimits(options)
  const { maxUploadBytes, maxConcurrentUploadBytes } = resolveUploadLimits(options)
  const { user, limits, templateOptions } = resolveSandboxSettings(options)
  const { maxSnapshots, maxSnapshotBytes, metricsIntervalMs } = resolveSnapshotsAndMetrics(options)
  const snapshotStorage = options.snapshotStorage ?? 'content'
  if (snapshotStorage !== 'content' && snapshotStorage !== 'copy')
    throw invalid('snapshotStorage must be "content" or "copy"')
  return {
    maxSnapshots,
    maxSnapshotBytes,
    snapshotStorage,
    metricsIntervalMs,
    user,
    limits,
    templateOptions,
    port,
    hostname,
    domain,
    tlsDir: options.tlsDir,
    allowRemote,
    stateDir: options.stateDir,
    apiKey: options.apiKey,
    pauseMode,
    retentionMs,
    maxSandboxes,
    defaultTimeoutMs,
    isolation,
    templates,
    logger: withLevel(options.logger),
    logLevel,
    maxConnectionsPerSandbox,
    maxConnections,
    maxUploadBytes,
    maxConcurrentUploadBytes,
  }
}

/** The logger as the host calls it: a line without a level is a warning. */
function withLevel(logger: LocalE2BOptions['logger']): ResolvedOptions['logger'] {
  if (!logger) return (line) => console.warn(line)
  return (line, level = 'warn') => logger(line, level)
}

/**
 * 1024, or a quarter of the process's soft limit on open files when that is lower (a default of 1024 gives
 * 256): two descriptors per connection leave half for the API, the sandboxes' pipes and their disks.
 */
function defaultMaxConnections(): number {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    if (line) return Math.max(16, Math.min(1024, Math.floor(Number(line[1]) / 4)))
  } catch {}
  return 256
}

/**
 * Bounds on the port edge. A connection costs the host two file descriptors (the client's and the one to the
 * sandbox's relay): 1024 stays well under a default soft limit of 4096 with room for the API and the
 * sandboxes' own pipes; 256 per sandbox lets one sandbox's page load hundreds of assets but not take all.
 */
function resolveConnectionLimits(
  options: LocalE2BOptions,
): Pick<ResolvedOptions, 'maxConnectionsPerSandbox' | 'maxConnections'> {
  const maxConnections = options.maxConnections ?? defaultMaxConnections()
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1)
    throw invalid('maxConnections must be a positive integer')
  const maxConnectionsPerSandbox = options.maxConnectionsPerSandbox ?? Math.min(256, maxConnections)
  if (!Number.isSafeInteger(maxConnectionsPerSandbox) || maxConnectionsPerSandbox < 1)
    throw invalid('maxConnectionsPerSandbox must be a positive integer')
  return { maxConnectionsPerSandbox, maxConnections }
}

/**
 * Upload caps. Uploads stream to disk, so these bound disk churn and request size, not
 * memory: 1 GiB per request is half the default sandbox disk and above any file an agent turn moves; the
 * concurrent budget (4 uploads of the maximum) keeps one tenant from monopolizing the host's disk bandwidth.
 */
function resolveUploadLimits(options: LocalE2BOptions) {
  const maxUploadBytes = options.maxUploadBytes ?? 1024 ** 3
  if (!Number.isSafeInteger(maxUploadBytes) || maxUploadBytes < 1)
    throw invalid('maxUploadBytes must be a positive integer')
  const maxConcurrentUploadBytes = options.maxConcurrentUploadBytes ?? Math.max(4 * 1024 ** 3, maxUploadBytes)
  if (!Number.isSafeInteger(maxConcurrentUploadBytes) || maxConcurrentUploadBytes < maxUploadBytes)
    throw invalid('maxConcurrentUploadBytes must be an integer of at least maxUploadBytes')
  return { maxUploadBytes, maxConcurrentUploadBytes }
}

/**
 * Snapshot limits and the metrics interval. 20 GiB holds a hundred snapshots of sandboxes that wrote 200 MiB
 * each (a snapshot takes what its disk holds, not the disk's size); 5 s is E2B's collection interval.
 */
function resolveSnapshotsAndMetrics(
  options: LocalE2BOptions,
): Pick<ResolvedOptions, 'maxSnapshots' | 'maxSnapshotBytes' | 'metricsIntervalMs'> {
  const maxSnapshots = options.maxSnapshots ?? 100
  if (!Number.isSafeInteger(maxSnapshots) || maxSnapshots < 0)
    throw invalid('maxSnapshots must be an integer of at least 0 (0: no snapshots)')
  const maxSnapshotBytes = options.maxSnapshotBytes ?? 20 * 1024 ** 3
  if (!Number.isSafeInteger(maxSnapshotBytes) || maxSnapshotBytes < 0)
    throw invalid('maxSnapshotBytes must be an integer of at least 0')
  const metricsIntervalMs = options.metricsIntervalMs ?? DEFAULT_METRICS_INTERVAL_MS
  if (!Number.isInteger(metricsIntervalMs) || metricsIntervalMs < 100 || metricsIntervalMs > 60_000)
    throw invalid('metricsIntervalMs must be an integer from 100 to 60000')
  return { maxSnapshots, maxSnapshotBytes, metricsIntervalMs }
}

const LIMIT_RANGES: Record<keyof SandboxLimits, [number, number]> = {
  pids: [8, 4_194_304],
  memoryBytes: [16 * 1024 * 1024, Number.MAX_SAFE_INTEGER],
  cpuWeight: [1, 10_000],
  diskBytes: [0, Number.MAX_SAFE_INTEGER],
  tmpfsBytes: [1024 * 1024, Number.MAX_SAFE_INTEGER],
}

function resolveUser(value: unknown, what: string): SandboxUser | undefined {
  if (value === undefined) return undefined
  if (value !== 'user' && value !== 'root') throw invalid(`${what} must be "user" or "root"`)
  return value
}

function resolveLimits(value: unknown, base: SandboxLimits, what: string): SandboxLimits {
  if (value === undefined) return base
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(`${what} must be an object`)
  const limits = { ...base }
  for (const [key, number] of Object.entries(value)) {
    const range = LIMIT_RANGES[key as keyof SandboxLimits]
    if (!range) throw invalid(`${what}: unknown limit "${key}"`)
    if (!Number.isSafeInteger(number) || number < range[0] || number > range[1]) {
      throw invalid(`${what}.${key} must be an integer from ${range[0]} to ${range[1]}`)
    }
    limits[key as keyof SandboxLimits] = number
  }
  return limits
}

/** The sandbox user and limits, host-wide and per template. */
function resolveSandboxSettings(
  options: LocalE2BOptions,
): Pick<ResolvedOptions, 'user' | 'limits' | 'templateOptions'> {
  const user = resolveUser(options.user, 'user') ?? 'user'
  const limits = resolveLimits(options.limits, DEFAULT_LIMITS, 'limits')
  const templateOptions: ResolvedOptions['templateOptions'] = {}
  const given = options.templateOptions ?? {}
  if (typeof given !== 'object' || given === null || Array.isArray(given))
    throw invalid('templateOptions must be an object keyed by template id')
  for (const [templateId, template] of Object.entries(given)) {
    if (!templateId) throw invalid('templateOptions keys must be non-empty template ids')
    if (typeof template !== 'object' || template === null)
      throw invalid(`templateOptions.${templateId} must be an object`)
    for (const key of Object.keys(template)) {
      if (!TEMPLATE_KEYS.has(key)) throw invalid(`templateOptions.${templateId}: unknown option "${key}"`)
    }
    const nested = template.nestedUserNamespaces ?? false
    if (typeof nested !== 'boolean')
      throw invalid(`templateOptions.${templateId}.nestedUserNamespaces must be a boolean`)
    templateOptions[templateId] = {
      user: resolveUser(template.user, `templateOptions.${templateId}.user`) ?? user,
      limits: resolveLimits(template.limits, limits, `templateOptions.${templateId}.limits`),
      nestedUserNamespaces: nested,
    }
  }
  return { user, limits, templateOptions }
}
