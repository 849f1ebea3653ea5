// E2B's REST control plane (`/sandboxes`, `/v2/sandboxes`): create, connect/resume, pause, kill, set
// timeout, get, list, metrics; snapshots and forks are snapshots.ts's. Every call needs the API key; faults
// are applied before the call is served.
import { mkdirSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { join } from 'node:path'
import type { HostEventLog } from './events.js'
import type { HostFaults } from './faults.js'
import {
  checkApiKey,
  HttpError,
  type Json,
  readJson,
  safeDecode,
  sendJson,
  stringMap,
  timeoutSeconds,
} from './http.js'
import { type Lifecycle, teardown } from './lifecycle.js'
import { type SandboxMetrics, sandboxSize } from './metrics.js'
import type { ResolvedOptions } from './options.js'
import { newSandboxId, type SandboxRegistry } from './registry.js'
import { HostResourceError } from './runtime/namespace.js'
import { newToken, type PauseMode, type Sandbox, type SandboxRecord } from './sandbox.js'
import { ENVD_VERSION, sandboxJson } from './sandbox-json.js'
import type { SnapshotService } from './snapshots.js'
import { parseIngress } from './user-ports.js'

const BASE_TEMPLATES = ['base', 'code-interpreter-v1', 'code-interpreter', 'code-interpreter-beta']

export interface ControlPlaneOptions {
  settings: ResolvedOptions
  stateDir: string
  apiKey: string
  /** The API key's team: the owner of the sandboxes it creates, the only one that reaches them. */
  team: string
  events: HostEventLog
  registry: SandboxRegistry
  lifecycle: Lifecycle
  faults: HostFaults
  makeSandbox: (record: SandboxRecord) => Sandbox
  snapshots: SnapshotService
  metrics: SandboxMetrics
  /**
   * False when a sandbox with internet access cannot be kept off the host's own network here (isolated
   * without nft or ip): such a create is refused.
   */
  canFilterInternet: boolean
}

/** True for an error that says the host ran short of descriptors, processes or memory (a retry may work). */
function isResourceShortage(error: unknown): boolean {
  if (error instanceof HostResourceError) return error.isResource
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return code === 'EMFILE' || code === 'ENFILE' || code === 'EAGAIN' || code === 'ENOMEM'
}

/** One entry of a list. */
function listedJson(sandbox: Sandbox): Json {
  const record = sandbox.record
  const body: Json = {
    sandboxID: record.sandboxId,
    templateID: record.templateId,
    clientID: 'local',
    startedAt: new Date(record.startedAt).toISOString(),
    endAt: new Date(record.endAt).toISOString(),
    ...sandboxSize(sandbox),
    metadata: record.metadata,
    state: record.state,
    envdVersion: ENVD_VERSION,
    volumeMounts: [],
  }
  if (record.alias) body.alias = record.alias
  return body
}

/** `GET /sandboxes/{id}`. */
function detailJson(sandbox: Sandbox): Json {
  return {
    ...listedJson(sandbox),
    envdAccessToken: sandbox.record.envdAccessToken,
    allowInternetAccess: sandbox.record.allowInternetAccess,
    lifecycle: {
      onTimeout: sandbox.record.autoPause ? 'pause' : 'kill',
      autoResume: sandbox.record.autoResume,
    },
  }
}

export class ControlPlane {
  readonly #options: ControlPlaneOptions
  readonly #templates: Set<string>

  constructor(options: ControlPlaneOptions) {
    this.#options = options
    const { settings } = options
    this.#templates = new Set([
      ...BASE_TEMPLATES,
      ...settings.templates,
      ...Object.keys(settings.templateOptions),
    ])
  }

  /** Serves one control-plane request. */
  async handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    if (!checkApiKey(request, response, this.#options.apiKey)) return
    const method = request.method ?? 'GET'
    const parts = url.pathname.split('/').filter(Boolean)
    const versioned = parts[0] === 'v2'
    const path = versioned ? parts.slice(1) : parts
    // Another team's sandbox is not found, as on E2B: for every route that names one, snapshots and forks too.
    if (path[0] === 'sandboxes' && path[1] !== undefined) this.#checkOwner(path[1])
    if (await this.#options.snapshots.handle(method, path, request, response, url)) return
    if (path[0] !== 'sandboxes') throw new HttpError(404, `no route ${method} ${url.pathname}`)
    const [, sandboxId, action] = path
    const { faults, registry } = this.#options
    if (sandboxId === undefined) {
      if (method === 'POST') {
        const body = await readJson(request)
        if (await faults.apply('create', undefined, response)) return
        return this.#create(body, response)
      }
      if (method === 'GET') return this.#list(url, response, !versioned)
    } else if (action === undefined) {
      if (method === 'GET') return sendJson(response, 200, detailJson(registry.lookup(sandboxId)))
      if (method === 'DELETE') {
        if (await faults.apply('kill', sandboxId, response)) return
        return this.#kill(sandboxId, response)
      }
    } else if (method === 'POST' && path.length === 3) {
      const body = await readJson(request)
      if (await this.#action(action, sandboxId, body, response)) return
    } else if (method === 'GET' && action === 'metrics' && path.length === 3) {
      return this.#options.metrics.answer(registry.lookup(sandboxId), url, response)
    }
    throw new HttpError(404, `no route ${method} ${url.pathname}`)
  }

  /** 404 unless `sandboxId` names a sandbox of this key's team (a malformed id is not found either). */
  #checkOwner(sandboxId: string): void {
    const notFound = () => new HttpError(404, `sandbox ${sandboxId.slice(0, 64)} not found`)
    if (sandboxId.length > 128 || !/^[A-Za-z0-9_-]+$/.test(sandboxId)) throw notFound()
    const sandbox = this.#options.registry.get(sandboxId)
    if (sandbox && sandbox.record.team !== this.#options.team) throw notFound()
  }

  /** `POST /sandboxes/{id}/<action>`; false when there is no such action. */
  async #action(action: string, sandboxId: string, body: Json, response: ServerResponse): Promise<boolean> {
    const { faults } = this.#options
    switch (action) {
      case 'connect':
      case 'resume':
        if (!(await faults.apply('connect', sandboxId, response)))
          await this.#connect(sandboxId, body, response)
        return true
      case 'pause':
        if (!(await faults.apply('pause', sandboxId, response))) await this.#pause(sandboxId, body, response)
        return true
      case 'timeout':
      case 'refreshes':
        if (await faults.apply('setTimeout', sandboxId, response)) return true
        this.#setTimeout(sandboxId, action === 'timeout' ? body.timeout : body.duration, response)
        return true
      default:
        return false
    }
  }

  async #create(body: Json, response: ServerResponse): Promise<void> {
    const { record, prepareDisk } = this.#newRecord(body)
    sendJson(
      response,
      201,
      sandboxJson(await this.startSandbox(record, prepareDisk), this.#options.settings.domain),
    )
  }

  /**
   * Boots and registers a new sandbox of `record`; `prepareDisk` first places its files (a snapshot's or a
   * fork's disk). 429 past `maxSandboxes`, checked before anything is copied.
   */
  async startSandbox(record: SandboxRecord, prepareDisk?: () => Promise<void>): Promise<Sandbox> {
    const { settings, registry, lifecycle, events } = this.#options
    const started = performance.now()
    if (registry.runningCount() >= settings.maxSandboxes) {
      throw new HttpError(
        429,
        `this host runs at most ${settings.maxSandboxes} sandboxes at once; kill or pause one`,
      )
    }
    // Creates, restores of a snapshot and forks all come here: the new sandbox is this key's.
    record.team = this.#options.team
    await prepareDisk?.()
    mkdirSync(join(record.rootDir, 'home/user'), { recursive: true })
    mkdirSync(join(record.rootDir, 'tmp'), { recursive: true, mode: 0o1777 })
    const sandbox = this.#options.makeSandbox(record)
    try {
      await sandbox.runtime.boot()
    } catch (error) {
      await teardown(sandbox, 'could not start').catch(() => {})
      sandbox.runtime.removeStorage()
      this.#options.lifecycle.release(sandbox.record)
      if (isResourceShortage(error))
        throw new HttpError(503, (error as Error).message, { 'retry-after': '5' })
      throw new HttpError(500, `could not start the sandbox: ${(error as Error).message}`)
    }
    registry.add(sandbox)
    registry.save()
    lifecycle.scheduleTimeout(sandbox)
    events.record('sandbox-create', sandbox.id, {
      templateId: record.templateId,
      createMs: performance.now() - started,
    })
    return sandbox
  }

  /**
   * The record of a sandbox to create, from the request body (checked; 400 on a bad field), and, when its
   * template is a snapshot, what places the snapshot's files before the first boot.
   */
  #newRecord(body: Json): { record: SandboxRecord; prepareDisk?: () => Promise<void> } {
    const { settings, stateDir, snapshots } = this.#options
    const templateId = body.templateID
    if (typeof templateId !== 'string' || templateId.length === 0)
      throw new HttpError(400, 'templateID is required')
    const snapshot = this.#templates.has(templateId) ? undefined : snapshots.resolve(templateId)
    if (!this.#templates.has(templateId) && !snapshot) {
      throw new HttpError(
        400,
        `unknown template '${templateId}' (this host serves: ${[...this.#templates].join(', ')})`,
      )
    }
    const timeout = timeoutSeconds(body.timeout)
    const metadata = stringMap(body.metadata, 'metadata')
    const envVars = stringMap(body.envVars, 'envVars')
    const autoResume =
      typeof body.autoResume === 'object' && body.autoResume !== null
        ? (body.autoResume as Json).enabled === true
        : body.autoResume === true
    const sandboxId = newSandboxId()
    const now = Date.now()
    const record: SandboxRecord = {
      sandboxId,
      templateId,
      envdAccessToken: newToken(),
      metadata,
      envVars,
      startedAt: now,
      endAt: now + (timeout === undefined ? settings.defaultTimeoutMs : timeout * 1000),
      state: 'running',
      autoPause: body.autoPause === true,
      autoPauseMemory: body.autoPauseMemory !== false,
      autoResume,
      allowInternetAccess: this.#internetAccess(body.allow_internet_access === true),
      rootDir: join(stateDir, 'sandboxes', sandboxId),
      memoryLost: false,
      pauses: [],
    }
    if (typeof body.alias === 'string') record.alias = body.alias
    refuseEgressRules(body.network)
    const ingress = parseIngress(body.network)
    if (ingress) record.ingress = ingress
    if (!snapshot) return { record }
    return { record, prepareDisk: snapshots.prepareFromSnapshot(snapshot, record) }
  }

  /** Whether a new sandbox gets internet access; 400 when it asks and the machine cannot filter it. */
  #internetAccess(asked: boolean): boolean {
    if (asked && !this.#options.canFilterInternet) {
      throw new HttpError(
        400,
        'this host cannot keep a sandbox with internet access off its own network (it needs nft and ip as root: apt-get install nftables iproute2); create it with allowInternetAccess: false',
      )
    }
    return asked
  }

  /** Runs `task` under the sandbox's lock, once it is known to be still registered (404 otherwise). */
  async #locked(sandboxId: string, task: (sandbox: Sandbox) => Promise<void>): Promise<void> {
    const { registry } = this.#options
    const sandbox = registry.lookup(sandboxId)
    await sandbox.serialize(async () => {
      if (!registry.holds(sandbox)) throw new HttpError(404, `sandbox ${sandboxId} not found`)
      await task(sandbox)
    })
  }

  async #connect(sandboxId: string, body: Json, response: ServerResponse): Promise<void> {
    const { settings, lifecycle, events, faults } = this.#options
    const timeout = timeoutSeconds(body.timeout)
    const memory = body.memory !== false
    await this.#locked(sandboxId, async (found) => {
      const sandbox = faults.applyIdChange(found)
      const timeoutMs = timeout === undefined ? settings.defaultTimeoutMs : timeout * 1000
      if (sandbox.record.state === 'running') {
        lifecycle.setEndAt(sandbox, Math.max(sandbox.record.endAt, Date.now() + timeoutMs))
        events.record('sandbox-connect', sandbox.id, { resumed: false })
        sendJson(response, 200, sandboxJson(sandbox, this.#options.settings.domain))
        return
      }
      await lifecycle.resume(sandbox, memory, timeoutMs, 'connect')
      events.record('sandbox-connect', sandbox.id, { resumed: true })
      sendJson(response, 201, sandboxJson(sandbox, this.#options.settings.domain))
    })
  }

  async #pause(sandboxId: string, body: Json, response: ServerResponse): Promise<void> {
    await this.#locked(sandboxId, async (sandbox) => {
      if (sandbox.record.state === 'paused')
        throw new HttpError(409, `sandbox ${sandboxId} is already paused`)
      const mode: PauseMode =
        body.memory === false && sandbox.pauseMode === 'memory' ? 'filesystem' : sandbox.pauseMode
      await this.#options.lifecycle.pause(sandbox, mode, 'api')
      sendJson(response, 204, undefined)
    })
  }

  async #kill(sandboxId: string, response: ServerResponse): Promise<void> {
    await this.#locked(sandboxId, (sandbox) => this.#options.lifecycle.destroy(sandbox, 'api'))
    sendJson(response, 204, undefined)
  }

  #setTimeout(sandboxId: string, value: unknown, response: ServerResponse): void {
    const sandbox = this.#options.registry.lookup(sandboxId)
    const seconds = timeoutSeconds(value)
    if (seconds === undefined) throw new HttpError(400, 'timeout is required')
    this.#options.lifecycle.setEndAt(sandbox, Date.now() + seconds * 1000)
    this.#options.events.record('sandbox-set-timeout', sandbox.id, { timeoutMs: seconds * 1000 })
    sendJson(response, 204, undefined)
  }

  /** `GET /sandboxes` (legacy: running only by default) and `GET /v2/sandboxes`, paged by `nextToken`. */
  #list(url: URL, response: ServerResponse, legacy: boolean): void {
    const query = parseListQuery(url.searchParams, legacy)
    const { team } = this.#options
    let matches = [...this.#options.registry.values()].filter(
      (sandbox) => sandbox.record.team === team && query.matches(sandbox.record),
    )
    const { order } = query
    matches.sort((a, b) => order * (a.record.startedAt - b.record.startedAt) || a.id.localeCompare(b.id))
    const after = query.after
    if (after) {
      matches = matches.filter(
        (sandbox) =>
          order * (sandbox.record.startedAt - after.startedAt) > 0 ||
          (sandbox.record.startedAt === after.startedAt && sandbox.id.localeCompare(after.id) > 0),
      )
    }
    const page = matches.slice(0, query.limit)
    const headers: Record<string, string> = {}
    const last = page.at(-1)
    if (matches.length > query.limit && last) {
      headers['x-next-token'] = Buffer.from(
        JSON.stringify({ startedAt: last.record.startedAt, id: last.id }),
      ).toString('base64url')
    }
    sendJson(response, 200, page.map(listedJson), headers)
  }
}

interface ListQuery {
  matches(record: SandboxRecord): boolean
  /** 1 ascending by start, -1 descending. */
  order: 1 | -1
  limit: number
  /** The last entry of the previous page (`nextToken`). */
  after: { startedAt: number; id: string } | undefined
}

function parseListQuery(params: URLSearchParams, legacy: boolean): ListQuery {
  const states = new Set(
    params
      .getAll('state')
      .flatMap((value) => value.split(','))
      .map((value) => value.trim())
      .filter(Boolean),
  )
  for (const state of states) {
    if (state !== 'running' && state !== 'paused') throw new HttpError(400, `unknown state '${state}'`)
  }
  if (legacy && states.size === 0) states.add('running')
  const metadataFilter: Record<string, string> = {}
  for (const raw of params.getAll('metadata')) {
    for (const [key, value] of new URLSearchParams(raw)) metadataFilter[safeDecode(key)] = safeDecode(value)
  }
  const template = params.get('template')
  const startedAfter = params.get('startedAfter')
  const startedAfterMs = startedAfter ? Date.parse(startedAfter) : undefined
  const limitRaw = params.get('limit')
  const limit = limitRaw === null ? 100 : Number(limitRaw)
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new HttpError(400, 'limit must be 1-1000')
  const token = params.get('nextToken')
  let after: ListQuery['after']
  if (token) {
    try {
      after = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as ListQuery['after']
    } catch {
      throw new HttpError(400, 'nextToken is not a token this host issued')
    }
  }
  return {
    matches: (record) =>
      (states.size === 0 || states.has(record.state)) &&
      (!template || record.templateId === template) &&
      // Inclusive, as E2B's: a sandbox started at exactly `startedAfter` is listed.
      !(startedAfterMs !== undefined && record.startedAt < startedAfterMs) &&
      Object.entries(metadataFilter).every(([key, value]) => record.metadata[key] === value),
    order: params.get('order') === 'asc' ? 1 : -1,
    limit,
    after,
  }
}

/**
 * 400 for the parts of a create request's `network` this host cannot honour: per-destination egress rules
 * (`allowOut`, `denyOut`, `rules`), an egress proxy and HTTPS ports. Ignoring them would hand back a sandbox
 * whose egress is not what was asked for.
 */
function refuseEgressRules(network: unknown): void {
  if (typeof network !== 'object' || network === null) return
  const given = ['allowOut', 'denyOut', 'rules', 'egressProxy', 'httpsPorts'].filter(
    (name) => (network as Record<string, unknown>)[name] !== undefined,
  )
  if (given.length === 0) return
  throw new HttpError(
    400,
    `this host cannot honour network.${given.join(', network.')} (it has no per-destination egress rules, egress proxy or HTTPS ports): leave them out; allowInternetAccess turns egress on or off as a whole`,
  )
}
