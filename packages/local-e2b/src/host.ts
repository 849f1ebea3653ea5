// startLocalE2B: wiring only. One HTTP server on one port serves E2B's REST control plane
// (control-plane.ts), envd, the code interpreter and the sandboxes' own servers (sandbox-traffic.ts and
// user-ports.ts, routed by edge.ts: the `<port>-<id>.<domain>` host name, or the E2b-Sandbox-Id /
// E2b-Sandbox-Port headers the SDK sends when `sandboxUrl` points here) and the /_local admin (admin.ts).
// The registry (registry.ts) and the snapshots (snapshot-store.ts) are persisted in stateDir; lifecycle.ts owns
// pause, resume, timers and teardown; metrics.ts samples the running sandboxes.
import { randomBytes } from 'node:crypto'
import { existsSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { type AdminOptions, handleAdmin } from './admin.js'
import { ControlPlane } from './control-plane.js'
import { ENVD_PORT, INTERPRETER_PORT, RoutingError, type SandboxTarget, sandboxTarget } from './edge.js'
import { signedFileSandbox } from './envd-signing.js'
import { LocalE2BError } from './errors.js'
import { type HostEvent, HostEventLog } from './events.js'
import { HostFaults, type LocalE2BFaults } from './faults.js'
import { HostLog } from './host-log.js'
import { prepareHostTls } from './host-tls.js'
import { HttpError, sendError, sendJson } from './http.js'
import { kernelHostDirectory } from './interpreter/index.js'
import { Lifecycle } from './lifecycle.js'
import { SandboxMetrics } from './metrics.js'
import { type LocalE2BOptions, type ResolvedOptions, resolveOptions } from './options.js'
import { PortRelays } from './port-relay.js'
import { SandboxRegistry } from './registry.js'
import { IdRanges, idRangeDirectory } from './runtime/id-ranges.js'
import { probeRuntimeSupport, type RuntimeSupport } from './runtime/support.js'
import { type PauseMode, Sandbox, type SandboxRecord, type SandboxView } from './sandbox.js'
import { SandboxRuntime } from './sandbox-runtime.js'
import { SandboxTraffic } from './sandbox-traffic.js'
import { SnapshotStore, teamOf } from './snapshot-store.js'
import { SnapshotService, unfreezeLeftoverDisks } from './snapshots.js'
import { prepareStateDir } from './state-dir.js'
import { type OpenConnections, UserPorts } from './user-ports.js'

export type { LocalE2BFaults } from './faults.js'

/**
 * The preload (`node --import <path>`, e.g. in NODE_OPTIONS) that makes `*.localhost` resolve to loopback
 * in a Node process, so `sandbox.getHost(port)` URLs of a host on the default domain work in fetch and
 * http without libnss-myhostname; undefined when the built file is not there (running from sources).
 */
export function localhostResolverPath(): string | undefined {
  const path = fileURLToPath(new URL('./localhost-resolver.js', import.meta.url))
  return existsSync(path) ? path : undefined
}
export { ENVD_VERSION } from './sandbox-json.js'

/** A running local E2B host. */
export interface LocalE2BHost {
  /** Control-plane URL (`apiUrl` / E2B_API_URL). */
  apiUrl: string
  /** envd + code-interpreter URL (`sandboxUrl` / E2B_SANDBOX_URL); the same server. */
  sandboxUrl: string
  /** The domain sandbox ports are named under: `sandbox.getHost(port)` is `<port>-<id>.<domain>`. */
  domain: string
  /** The CA file clients trust for the port's https (with `tlsDir`), else undefined. */
  caFile: string | undefined
  /** The API key clients send (secret: do not log). */
  apiKey: string
  /** `E2B_API_URL`, `E2B_SANDBOX_URL`, `E2B_API_KEY`, `E2B_DOMAIN` to export for SDK clients. */
  env: Record<string, string>
  /** Host event log (emitter + ordered list). */
  events: HostEventLog
  /** Fault injection. */
  faults: LocalE2BFaults
  /** Directory holding the registry and the sandboxes' files. */
  stateDir: string
  /** Listening port. */
  port: number
  /** Listening interface. */
  hostname: string
  /** Isolation actually in use. */
  isolation: 'bubblewrap' | 'none'
  /** How pauses freeze processes on this machine. */
  freezer: RuntimeSupport['freezer']
  /** Default pause mode. */
  pauseMode: PauseMode
  /** Introspection of one sandbox (state, pauses with durations, pids, CPU ticks), or undefined. */
  getSandbox(sandboxId: string): SandboxView | undefined
  /** Introspection of every sandbox. */
  listSandboxes(): SandboxView[]
  /**
   * Connections to the sandboxes' own ports open now (HTTP requests in flight, relayed WebSockets): bounded
   * by `maxConnections` and `maxConnectionsPerSandbox`.
   */
  openConnections(): OpenConnections
  /** Stops every sandbox's processes, the server, and removes a temp stateDir. Idempotent. */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Gives a record its host id range (isolated mode): a new or legacy sandbox gets a free one; a restored one
 * takes its own back, or, when another sandbox of the machine holds it meanwhile, moves to a free one (its
 * files follow at its next boot).
 */
function assignIdRange(record: SandboxRecord, ranges: IdRanges): void {
  const previous = record.idRange
  if (previous !== undefined && ranges.reclaim(previous, record.rootDir)) return
  record.idRange = ranges.allocate(record.rootDir)
  if (previous !== undefined) record.rebaseFrom ??= previous
}

/**
 * Gives sandboxes from a registry written before owners were kept to this host's key (the only key such a
 * host ever had), so that from now on no other key reaches them.
 */
function adoptUnowned(registry: SandboxRegistry, team: string, log: HostLog): void {
  let adopted = 0
  for (const sandbox of registry.values()) {
    if (sandbox.record.team !== undefined) continue
    sandbox.record.team = team
    adopted++
  }
  if (adopted === 0) return
  registry.save()
  log.log('warn', `${adopted} sandbox(es) from a registry without owners now belong to this host's API key`)
}

/** Builds the Sandbox (and its runtime) of a record, with the template's user and limits. */
function sandboxFactory(
  settings: ResolvedOptions,
  support: RuntimeSupport,
  events: HostEventLog,
  ranges: IdRanges | undefined,
  populateDisk: (sandboxId: string, rootDir: string) => void,
): (record: SandboxRecord) => Sandbox {
  const kernelHostDir = kernelHostDirectory()
  return (record) => {
    const template = settings.templateOptions[record.baseTemplateId ?? record.templateId]
    if (ranges) assignIdRange(record, ranges)
    const runtime = new SandboxRuntime({
      id: record.sandboxId,
      rootDir: record.rootDir,
      support,
      allowInternet: record.allowInternetAccess,
      kernelHostDir,
      pidFloor: () => record.lastPid ?? 0,
      user: template?.user ?? settings.user,
      limits: template?.limits ?? settings.limits,
      nestedUserNamespaces: template?.nestedUserNamespaces ?? false,
      logger: settings.logger,
      ...(record.idRange === undefined ? {} : { idRange: record.idRange }),
      ...(record.rebaseFrom === undefined ? {} : { rebaseFrom: record.rebaseFrom }),
      onRebased: () => {
        delete record.rebaseFrom
      },
      populateDisk: (rootDir) => populateDisk(record.sandboxId, rootDir),
    })
    // What the host creates for the sandbox (uploads, directories) belongs to the sandbox's user.
    if (runtime.owner) record.owner = runtime.owner
    else delete record.owner
    return new Sandbox(record, runtime, events, settings.pauseMode)
  }
}

/** Answers a request that a handler failed with: its status for known errors, 500 otherwise. */
function answerError(
  events: HostEventLog,
  response: ServerResponse,
  url: URL,
  sandboxId: string | undefined,
  error: unknown,
): void {
  if (error instanceof HttpError) sendError(response, error.status, error.message, error.headers)
  else if (LocalE2BError.isInstance(error)) sendError(response, error.status, error.message)
  else {
    const message = (error as Error)?.message ?? String(error)
    events.record('host-error', sandboxId, { path: url.pathname, error: message })
    sendError(response, 500, `internal error: ${message}`)
  }
}

/**
 * The sandbox port a request is for: its host name or routing headers, else a signed `/files` URL's sandbox
 * (the SDK's signed URLs name none); undefined for the host's own routes. Throws RoutingError.
 */
function targetOf(request: IncomingMessage, url: URL, registry: SandboxRegistry): SandboxTarget | undefined {
  const target = sandboxTarget(request)
  if (target) return target
  const signed = signedFileSandbox(request, url, registry)
  return signed ? { sandboxId: signed.id, port: ENVD_PORT } : undefined
}

/** A request the host cannot route: 400 with E2B's plain reason. */
function refuseRouting(response: ServerResponse, error: RoutingError): void {
  response.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' })
  response.end(`${error.message}\n`)
}

/** One server for everything: sandbox traffic (edge.ts), then /_local admin, /health, the REST API. */
function router(parts: {
  events: HostEventLog
  registry: SandboxRegistry
  traffic: SandboxTraffic
  controlPlane: ControlPlane
  admin: AdminOptions
  log: HostLog
}): (request: IncomingMessage, response: ServerResponse) => Promise<void> {
  return async (request, response) => {
    let target: SandboxTarget | undefined
    parts.log.request(request, response, () =>
      target
        ? {
            ...target,
            userPort: target.port !== ENVD_PORT && target.port !== INTERPRETER_PORT,
          }
        : undefined,
    )
    const url = new URL(request.url ?? '/', 'http://local')
    let sandboxId: string | undefined
    try {
      target = targetOf(request, url, parts.registry)
      sandboxId = target?.sandboxId
      if (target) return await parts.traffic.handle(request, response, url, target)
      if (url.pathname === '/files' && url.searchParams.has('signature')) {
        // A signed URL no sandbox's token made (envd's answer for a wrong signature).
        return sendError(response, 401, 'invalid signature')
      }
      if (url.pathname.startsWith('/_local/')) return await handleAdmin(parts.admin, request, response, url)
      if (url.pathname === '/health') return sendJson(response, 200, { status: 'ok' })
      return await parts.controlPlane.handle(request, response, url)
    } catch (error) {
      if (error instanceof RoutingError) return refuseRouting(response, error)
      answerError(parts.events, response, url, sandboxId, error)
    }
  }
}

/** Upgrade requests (WebSocket): relayed to a sandbox's user port; anything else is refused. */
function upgradeRouter(
  userPorts: UserPorts,
  log: HostLog,
): (request: IncomingMessage, socket: Duplex, head: Buffer) => Promise<void> {
  const refuse = (socket: Duplex, status: string) => {
    socket.end(`HTTP/1.1 ${status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`)
  }
  return async (request, socket, head) => {
    socket.on('error', () => socket.destroy())
    let target: SandboxTarget | undefined
    try {
      target = sandboxTarget(request)
      if (!target || target.port === ENVD_PORT || target.port === INTERPRETER_PORT) {
        log.upgrade(target, 'refused 400')
        return refuse(socket, '400 Bad Request')
      }
      await userPorts.handleUpgrade(request, socket, head, target)
      log.upgrade(target, 'relayed or answered')
    } catch (error) {
      log.upgrade(target, `failed: ${(error as Error)?.message ?? String(error)}`)
      refuse(socket, error instanceof RoutingError ? '400 Bad Request' : '500 Internal Server Error')
    }
  }
}

function listen(server: Server, port: number, hostname: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, hostname, () => {
      server.off('error', reject)
      resolve(server.address() as AddressInfo)
    })
  })
}

const UNISOLATED_WARNING =
  '[sandkeep-local-e2b] WARNING: running sandboxes UNISOLATED (no bubblewrap, or not root): their processes run as this user on this machine with full access to it. Install bubblewrap and run as root for isolation.'

/** Starts a local E2B-compatible host. Throws LocalE2BError INVALID_ARGUMENT for bad options. */
export async function startLocalE2B(options: LocalE2BOptions = {}): Promise<LocalE2BHost> {
  const settings: ResolvedOptions = resolveOptions(options)
  const support = probeRuntimeSupport(settings.isolation)
  const { stateDir, ownsStateDir } = prepareStateDir(settings.stateDir, settings.logger)
  const apiKey = settings.apiKey ?? `e2b_${randomBytes(20).toString('hex')}`
  if (support.isolation === 'none') {
    settings.logger(
      `${UNISOLATED_WARNING} ${
        support.sandboxHome
          ? "Each sandbox's directory stands in as /home/user for its processes (a user and mount namespace of their own)."
          : "This machine gives no unprivileged user namespaces: commands and code see this machine's paths (HOME and the working directory are the sandbox's directory; an absolute /home/user path is not)."
      }`,
    )
  }

  const events = new HostEventLog()
  const log = new HostLog(settings.logger, settings.logLevel)
  log.watch(events)
  const registry = new SandboxRegistry(stateDir, settings.logger)
  const ranges =
    support.isolation === 'bubblewrap' ? new IdRanges(idRangeDirectory(), registry.path) : undefined
  // Bound once the snapshot service exists (a sandbox boots only after the host started).
  const late: { snapshots?: SnapshotService } = {}
  const makeSandbox = sandboxFactory(settings, support, events, ranges, (sandboxId, rootDir) =>
    late.snapshots?.populateDisk(sandboxId, rootDir),
  )
  const release = (record: SandboxRecord) => {
    if (ranges && record.idRange !== undefined) ranges.release(record.idRange, record.rootDir)
  }
  const lifecycle = new Lifecycle({
    registry,
    events,
    retentionMs: settings.retentionMs,
    makeSandbox,
    release,
  })
  const store = new SnapshotStore(stateDir, settings.logger)
  store.load()
  const metrics = new SandboxMetrics({ registry, events, intervalMs: settings.metricsIntervalMs })
  const team = teamOf(apiKey)
  const snapshots: SnapshotService = new SnapshotService({
    settings,
    stateDir,
    team,
    events,
    registry,
    store,
    startSandbox: (record, prepareDisk): Promise<Sandbox> => controlPlane.startSandbox(record, prepareDisk),
    applyFault: (sandboxId, response) => faults.apply('snapshot', sandboxId, response),
    // As the runtime decides at boot (sandbox-runtime.ts): isolated, with disk images and a disk size.
    usesDiskImage: (record) =>
      support.isolation === 'bubblewrap' &&
      support.diskImages &&
      (settings.templateOptions[record.baseTemplateId ?? record.templateId]?.limits ?? settings.limits)
        .diskBytes > 0,
  })
  late.snapshots = snapshots
  const faults = new HostFaults({
    events,
    registry,
    lifecycle,
    dropConnections: () => server.closeAllConnections(),
  })
  const controlPlane: ControlPlane = new ControlPlane({
    settings,
    stateDir,
    apiKey,
    team,
    events,
    registry,
    lifecycle,
    faults,
    makeSandbox,
    snapshots,
    metrics,
    // Unisolated, a sandbox runs in the host's network anyway: nothing to filter, nothing promised.
    canFilterInternet: support.isolation === 'none' || support.internetFilter,
  })
  const relays = new PortRelays({ logger: settings.logger })
  const userPorts = new UserPorts({
    registry,
    lifecycle,
    events,
    relays,
    defaultTimeoutMs: settings.defaultTimeoutMs,
    maxConnectionsPerSandbox: settings.maxConnectionsPerSandbox,
    maxConnections: settings.maxConnections,
  })
  const traffic = new SandboxTraffic({ settings, support, events, registry, lifecycle, faults, userPorts })
  const { isolation } = support
  const getSandbox = (id: string) => registry.get(id)?.view(isolation)
  // The admin routes are the key's too: another team's sandbox is not there.
  const getOwnSandbox = (id: string) => {
    const sandbox = registry.get(id)
    return sandbox?.record.team === team ? sandbox.view(isolation) : undefined
  }

  const route = router({
    events,
    registry,
    traffic,
    controlPlane,
    admin: { apiKey, events, faults, getSandbox: getOwnSandbox },
    log,
  })
  const server: Server = createServer((request, response) => void route(request, response))
  const upgrade = upgradeRouter(userPorts, log)
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    void upgrade(request, socket, head)
  })
  server.keepAliveTimeout = 30_000
  const tls = settings.tlsDir
    ? prepareHostTls(settings.tlsDir, () => new URL(`http://${settings.domain}`).hostname)
    : undefined
  await lifecycle.restore('host-restart')
  adoptUnowned(registry, team, log)
  unfreezeLeftoverDisks(registry)
  metrics.start()
  // With TLS, one listener takes both and hands each connection to the same server.
  const front = tls ? await tls.listen(server, settings.port, settings.hostname) : undefined
  const address = front
    ? (front.address() as AddressInfo)
    : await listen(server, settings.port, settings.hostname)
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const baseUrl = `http://${urlHost}:${address.port}`
  // Known once the server listens (its default names the port); create, connect and fork answer it.
  settings.domain ??= `localhost:${address.port}`
  const domain = settings.domain

  let closed = false
  async function close(): Promise<void> {
    if (closed) return
    closed = true
    metrics.stop()
    front?.close()
    server.closeAllConnections()
    // Upgraded sockets are no longer the server's: they go first, giving their descriptors back.
    userPorts.close()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await snapshots.idle()
    await lifecycle.closeAll()
    relays.close()
    if (ownsStateDir) {
      // The sandboxes go with the temp state dir: nothing may keep their id ranges.
      for (const sandbox of registry.values()) release(sandbox.record)
      rmSync(stateDir, { recursive: true, force: true })
    } else registry.save()
    registry.clear()
    events.record('host-close', undefined, {})
  }

  const host: LocalE2BHost = {
    apiUrl: baseUrl,
    sandboxUrl: baseUrl,
    domain,
    caFile: tls?.caFile,
    apiKey,
    env: { E2B_API_URL: baseUrl, E2B_SANDBOX_URL: baseUrl, E2B_API_KEY: apiKey, E2B_DOMAIN: domain },
    events,
    faults,
    stateDir,
    port: address.port,
    hostname: settings.hostname,
    isolation,
    freezer: support.freezer,
    pauseMode: settings.pauseMode,
    getSandbox,
    listSandboxes() {
      return [...registry.values()].map((sandbox) => sandbox.view(isolation))
    },
    openConnections: () => userPorts.openConnections(),
    close,
    [Symbol.asyncDispose]: close,
  }
  events.record('host-start', undefined, { port: address.port, isolation, freezer: support.freezer })
  return host
}

export type { HostEvent, OpenConnections }
