// startLocalE2B: one HTTP server on one port serving E2B's REST control plane, envd (Connect RPC + /files)
// and the code interpreter (port 49999), routed by the E2b-Sandbox-Id / E2b-Sandbox-Port headers the SDK
// sends when `sandboxUrl` points here. The registry is persisted in stateDir.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SandkeepError, SandkeepErrorCode } from '@sandkeep/core'
import { ConnectError, openServerStream, writeUnaryError } from './connect-protocol.js'
import {
  HttpError,
  handleFileDownload,
  handleFilesystemRpc,
  handleFileUpload,
  UploadLimits,
} from './envd-filesystem.js'
import { baseEnvironment, handleProcessRpc, startProcess } from './envd-process.js'
import { type HostEvent, HostEventLog } from './events.js'
import {
  type FailNextOptions,
  type FaultOperation,
  FaultRules,
  isFaultOperation,
  type LatencyOptions,
} from './faults.js'
import type { CodeInterpreter, CreateCodeInterpreter } from './interpreter/types.js'
import { type LocalE2BOptions, type ResolvedOptions, resolveOptions } from './options.js'
import { SANDBOX_HOME } from './paths.js'
import { probeRuntimeSupport, type RuntimeSupport, SANDBOX_KERNEL_DIR, SandboxRuntime } from './runtime.js'
import { newToken, type PauseMode, Sandbox, type SandboxRecord, type SandboxView } from './sandbox.js'

/** envd version reported to the SDK; gates its features (0.6.4 = metadata, watch entries, octet uploads). */
export const ENVD_VERSION = '0.6.4'
const ENVD_PORT = 49983
const INTERPRETER_PORT = 49999
const JSON_LIMIT = 1024 * 1024
const BASE_TEMPLATES = ['base', 'code-interpreter-v1', 'code-interpreter', 'code-interpreter-beta']

/** Sandbox-level faults and request-level fault rules (also reachable under `/_local/`). */
export interface LocalE2BFaults {
  /** The next `count` calls of `operation` answer `status` with `body` instead of being served. */
  failNext(operation: FaultOperation, options?: FailNextOptions): void
  /** Delays calls of `operation` by `ms` (every call until `clear()`, or `count` calls). */
  addLatency(operation: FaultOperation, ms: number, options?: LatencyOptions): void
  /** Removes every pending fail/latency rule. */
  clear(): void
  /** Pending fail/latency rules. */
  list(): Array<Record<string, unknown>>
  /** A paused sandbox passes its retention now: it is deleted, connect gets 404. */
  expire(sandboxId: string): Promise<void>
  /** Kills every process and kernel of the sandbox, keeps its files (it stays in its state). */
  dropMemory(sandboxId: string): Promise<void>
  /** Kills one envd-started process (the given pid, or the oldest one); resolves with the killed pid. */
  killProcess(sandboxId: string, pid?: number): Promise<number>
  /** Restarts the host on the same stateDir and port: processes die, sandboxes come back paused. */
  restart(): Promise<void>
  /** The next connect of `sandboxId` answers with a new id (the same sandbox); the old id then 404s. */
  changeIdOnNextConnect(sandboxId: string, newId?: string): void
}

/** A running local E2B host. */
export interface LocalE2BHost {
  /** Control-plane URL (`apiUrl` / E2B_API_URL). */
  apiUrl: string
  /** envd + code-interpreter URL (`sandboxUrl` / E2B_SANDBOX_URL); the same server. */
  sandboxUrl: string
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
  /** Stops every sandbox's processes, the server, and removes a temp stateDir. Idempotent. */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

type Json = Record<string, unknown>

class RestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  if (response.headersSent) {
    response.end()
    return
  }
  const payload = body === undefined ? '' : JSON.stringify(body)
  response.writeHead(status, {
    ...(payload ? { 'content-type': 'application/json' } : {}),
    'content-length': Buffer.byteLength(payload),
    ...headers,
  })
  response.end(payload)
}

function sendError(response: ServerResponse, status: number, message: string) {
  sendJson(response, status, { code: status, message })
}

function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let failed = false
    request.on('data', (chunk: Buffer) => {
      if (failed) return
      size += chunk.length
      if (size > limit) {
        failed = true
        reject(new RestError(400, `request body is larger than ${limit} bytes`))
        request.resume()
        return
      }
      chunks.push(chunk)
    })
    request.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks))
    })
    request.on('error', (error) => {
      if (!failed) reject(error)
    })
  })
}

function parseJsonBody(body: Buffer): Json {
  if (body.length === 0) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString('utf8'))
  } catch {
    throw new RestError(400, 'request body is not valid JSON')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new RestError(400, 'request body must be a JSON object')
  }
  return parsed as Json
}

function stringMap(value: unknown, what: string): Record<string, string> {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value))
    throw new RestError(400, `${what} must be an object of strings`)
  const out: Record<string, string> = {}
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string') throw new RestError(400, `${what}.${key} must be a string`)
    if (key.length === 0 || key.length > 256)
      throw new RestError(400, `${what} keys must be 1-256 characters`)
    out[key] = entry
  }
  return out
}

function timeoutSeconds(value: unknown, what = 'timeout'): number | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 86_400 * 30) {
    throw new RestError(400, `${what} must be a whole number of seconds`)
  }
  return value
}

function newSandboxId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'
  const bytes = randomBytes(20)
  let id = 'i'
  for (let index = 1; index < 20; index++) id += alphabet[(bytes[index] ?? 0) % alphabet.length]
  return id
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A small fallback while the code interpreter module is not there: 501 on port 49999. */
function missingInterpreter(): CodeInterpreter {
  return {
    async handle(_request, response) {
      sendError(response, 501, 'the code interpreter is not available in this build of @sandkeep/local-e2b')
    },
    reset() {},
    async close() {},
  }
}

async function loadInterpreterFactory(): Promise<CreateCodeInterpreter | undefined> {
  // A variable specifier so the bundler does not require the module while it is being written.
  const specifier = './interpreter/index.js'
  try {
    const module = (await import(/* @vite-ignore */ specifier)) as {
      createCodeInterpreter?: CreateCodeInterpreter
    }
    return module.createCodeInterpreter
  } catch {
    return undefined
  }
}

function kernelHostDir(): string {
  return fileURLToPath(new URL('../kernels', import.meta.url))
}

/** Starts a local E2B-compatible host. Throws SandkeepError INVALID_ARGUMENT for bad options. */
export async function startLocalE2B(options: LocalE2BOptions = {}): Promise<LocalE2BHost> {
  const settings: ResolvedOptions = resolveOptions(options)
  const support = probeRuntimeSupport(settings.isolation)
  const ownsStateDir = settings.stateDir === undefined
  if (settings.stateDir !== undefined) mkdirSync(settings.stateDir, { recursive: true })
  const stateDir = realpathSync(settings.stateDir ?? mkdtempSync(join(tmpdir(), 'sandkeep-local-e2b-')))
  mkdirSync(join(stateDir, 'sandboxes'), { recursive: true })
  const apiKey = settings.apiKey ?? `e2b_${randomBytes(20).toString('hex')}`
  const uploads = new UploadLimits(settings.maxUploadBytes, settings.maxConcurrentUploadBytes)
  const events = new HostEventLog()
  const rules = new FaultRules()
  const sandboxes = new Map<string, Sandbox>()
  const pendingIdChanges = new Map<string, string | undefined>()
  const retentionTimers = new Map<string, NodeJS.Timeout>()
  const templates = new Set([
    ...BASE_TEMPLATES,
    ...settings.templates,
    ...Object.keys(settings.templateOptions),
  ])
  const createInterpreter = await loadInterpreterFactory()
  const kernelDir = kernelHostDir()
  let closed = false

  if (support.isolation === 'none') {
    settings.logger(
      '[sandkeep-local-e2b] WARNING: running sandboxes UNISOLATED (no bubblewrap, or not root): their processes run as this user on this machine with full access to it. Install bubblewrap and run as root for isolation.',
    )
  }

  const registryPath = join(stateDir, 'registry.json')

  function saveRegistry(): void {
    const records = [...sandboxes.values()].map((sandbox) => sandbox.record)
    const temp = `${registryPath}.${process.pid}.tmp`
    writeFileSync(temp, JSON.stringify({ version: 1, sandboxes: [...records, ...unusableRecords] }))
    renameSync(temp, registryPath)
  }

  function makeSandbox(record: SandboxRecord): Sandbox {
    const template = settings.templateOptions[record.templateId]
    const runtime = new SandboxRuntime({
      id: record.sandboxId,
      rootDir: record.rootDir,
      support,
      allowInternet: record.allowInternetAccess,
      kernelHostDir: kernelDir,
      pidFloor: () => record.lastPid ?? 0,
      user: template?.user ?? settings.user,
      limits: template?.limits ?? settings.limits,
      logger: settings.logger,
    })
    // What the host creates for the sandbox (uploads, directories) belongs to the sandbox's user.
    if (runtime.owner) record.owner = runtime.owner
    else delete record.owner
    return new Sandbox(record, runtime, events, settings.pauseMode)
  }

  /** Loads the registry: every sandbox comes back paused, its memory lost (a restarted host has no processes). */
  /** Records the registry could not use; kept and written back so that nothing is lost. */
  let unusableRecords: unknown[] = []

  /** Loads the registry: every sandbox comes back paused, its memory lost (a restarted host has no processes). */
  function loadRegistry(reason: string): void {
    if (!existsSync(registryPath)) return
    let parsed: { sandboxes?: unknown }
    try {
      parsed = JSON.parse(readFileSync(registryPath, 'utf8')) as { sandboxes?: unknown }
      if (typeof parsed !== 'object' || parsed === null) throw new Error('not an object')
    } catch (error) {
      // Keep the unreadable file aside instead of overwriting it with an empty registry.
      const aside = `${registryPath}.unreadable-${Date.now()}`
      renameSync(registryPath, aside)
      settings.logger(
        `[sandkeep-local-e2b] registry ${registryPath} is unreadable (${String(error)}); moved to ${aside}, starting empty`,
      )
      return
    }
    unusableRecords = []
    for (const record of Array.isArray(parsed.sandboxes) ? (parsed.sandboxes as SandboxRecord[]) : []) {
      if (!isUsableRecord(record)) {
        unusableRecords.push(record)
        continue
      }
      if (record.state === 'running') {
        const now = Date.now()
        record.pauses.push({ mode: 'filesystem', pausedAt: now, pauseMs: 0, reason })
        record.state = 'paused'
        record.pausedAt = now
      }
      record.memoryLost = true
      const sandbox = makeSandbox(record)
      sandboxes.set(record.sandboxId, sandbox)
      scheduleRetention(sandbox)
    }
    if (unusableRecords.length > 0) {
      settings.logger(
        `[sandkeep-local-e2b] ${unusableRecords.length} registry record(s) are malformed; kept as they are`,
      )
    }
    saveRegistry()
  }

  function scheduleTimeout(sandbox: Sandbox): void {
    if (sandbox.timeoutTimer) clearTimeout(sandbox.timeoutTimer)
    sandbox.timeoutTimer = undefined
    if (sandbox.record.state !== 'running') return
    const delay = Math.max(0, Math.min(sandbox.record.endAt - Date.now(), 2 ** 31 - 1))
    sandbox.timeoutTimer = setTimeout(() => {
      void sandbox
        .serialize(async () => {
          if (sandboxes.get(sandbox.id) !== sandbox || sandbox.record.state !== 'running') return
          if (sandbox.record.endAt > Date.now()) return scheduleTimeout(sandbox)
          events.record('sandbox-timeout', sandbox.id, {
            action: sandbox.record.autoPause ? 'pause' : 'kill',
          })
          if (sandbox.record.autoPause) {
            const mode: PauseMode =
              sandbox.record.autoPauseMemory || sandbox.pauseMode !== 'memory'
                ? sandbox.pauseMode
                : 'filesystem'
            await doPause(sandbox, mode, 'timeout')
          } else {
            await destroySandbox(sandbox, 'timeout')
          }
        })
        .catch((error: unknown) =>
          events.record('sandbox-timeout-fail', sandbox.id, { error: String(error) }),
        )
    }, delay)
    sandbox.timeoutTimer.unref()
  }

  function scheduleRetention(sandbox: Sandbox): void {
    const existing = retentionTimers.get(sandbox.id)
    if (existing) clearTimeout(existing)
    retentionTimers.delete(sandbox.id)
    if (settings.retentionMs === undefined || sandbox.record.state !== 'paused') return
    const pausedAt = sandbox.record.pausedAt ?? Date.now()
    const delay = Math.max(0, pausedAt + settings.retentionMs - Date.now())
    const timer = setTimeout(
      () => {
        void sandbox.serialize(async () => {
          if (sandboxes.get(sandbox.id) !== sandbox || sandbox.record.state !== 'paused') return
          if (sandbox.record.pausedAt !== pausedAt) return
          await destroySandbox(sandbox, 'retention')
          events.record('sandbox-expire', sandbox.id, {
            retentionMs: settings.retentionMs,
            reason: 'retention',
          })
        })
      },
      Math.min(delay, 2 ** 31 - 1),
    )
    timer.unref()
    retentionTimers.set(sandbox.id, timer)
  }

  async function doPause(sandbox: Sandbox, mode: PauseMode, reason: string): Promise<void> {
    if (sandbox.timeoutTimer) clearTimeout(sandbox.timeoutTimer)
    const pause = await sandbox.pause(mode, reason)
    saveRegistry()
    scheduleRetention(sandbox)
    events.record('sandbox-pause', sandbox.id, { mode, pauseMs: pause.pauseMs, reason })
  }

  async function doResume(
    sandbox: Sandbox,
    memory: boolean,
    timeoutMs: number,
    reason: string,
  ): Promise<void> {
    const retention = retentionTimers.get(sandbox.id)
    if (retention) clearTimeout(retention)
    retentionTimers.delete(sandbox.id)
    const result = await sandbox.resume({
      memory,
      restartProcesses: async (config, tag) => {
        const entry = await startProcess(sandbox, events, {
          config,
          stdin: false,
          timeoutMs: 0,
          ...(tag ? { tag } : {}),
        })
        events.record('process-restart', sandbox.id, { pid: entry.pid, cmd: config.cmd, args: config.args })
      },
    })
    if (result.coldBoot) sandbox.interpreter?.reset()
    sandbox.record.endAt = Date.now() + timeoutMs
    saveRegistry()
    scheduleTimeout(sandbox)
    events.record('sandbox-resume', sandbox.id, {
      resumeMs: result.resumeMs,
      coldBoot: result.coldBoot,
      reason,
    })
  }

  async function destroySandbox(sandbox: Sandbox, reason: string): Promise<void> {
    if (sandbox.timeoutTimer) clearTimeout(sandbox.timeoutTimer)
    const retention = retentionTimers.get(sandbox.id)
    if (retention) clearTimeout(retention)
    retentionTimers.delete(sandbox.id)
    sandboxes.delete(sandbox.id)
    saveRegistry()
    for (const entry of sandbox.processes.values()) {
      for (const stream of entry.subscribers)
        stream.end(new ConnectError('unavailable', 'sandbox was killed'))
    }
    sandbox.processes.clear()
    await sandbox.interpreter?.close().catch(() => {})
    await sandbox.runtime.destroy()
    sandbox.runtime.removeStorage()
    events.record('sandbox-kill', sandbox.id, { reason })
  }

  function interpreterOf(sandbox: Sandbox): CodeInterpreter {
    if (sandbox.interpreter) return sandbox.interpreter
    if (!createInterpreter) {
      sandbox.interpreter = missingInterpreter()
      return sandbox.interpreter
    }
    const isolated = support.isolation === 'bubblewrap'
    sandbox.interpreter = createInterpreter({
      sandboxId: sandbox.id,
      kernelDir: isolated ? SANDBOX_KERNEL_DIR : kernelDir,
      homeDir: isolated ? SANDBOX_HOME : sandbox.runtime.hostPathOf(SANDBOX_HOME),
      envs: { ...sandbox.record.envVars },
      emit: (type, detail) => events.record(type, sandbox.id, detail),
      spawner: {
        spawn(command, args, spawnOptions) {
          const cwd = isolated
            ? spawnOptions.cwd
            : spawnOptions.cwd.replace(sandbox.record.rootDir, '') || SANDBOX_HOME
          const child = sandbox.runtime.spawnNow(command, args, {
            cwd,
            env: { ...baseEnvironment(), ...sandbox.record.envVars, ...spawnOptions.env },
          })
          // The pid handshake is not needed here; drain it so the pipe never fills.
          ;(child.stdio[3] as NodeJS.ReadableStream | undefined)?.resume()
          return child
        },
      },
    })
    return sandbox.interpreter
  }

  /** The sandbox's traffic token (port 49999 only), derived so that it never opens envd. */
  function trafficTokenOf(sandbox: Sandbox): string {
    return createHmac('sha256', sandbox.record.envdAccessToken).update('traffic-access-token').digest('hex')
  }

  function sandboxJson(sandbox: Sandbox): Json {
    const body: Json = {
      sandboxID: sandbox.id,
      templateID: sandbox.record.templateId,
      clientID: 'local',
      envdVersion: ENVD_VERSION,
      envdAccessToken: sandbox.record.envdAccessToken,
      trafficAccessToken: trafficTokenOf(sandbox),
    }
    if (sandbox.record.alias) body.alias = sandbox.record.alias
    return body
  }

  function listedJson(sandbox: Sandbox): Json {
    const record = sandbox.record
    const body: Json = {
      sandboxID: record.sandboxId,
      templateID: record.templateId,
      clientID: 'local',
      startedAt: new Date(record.startedAt).toISOString(),
      endAt: new Date(record.endAt).toISOString(),
      cpuCount: 2,
      memoryMB: 512,
      diskSizeMB: 1024,
      metadata: record.metadata,
      state: record.state,
      envdVersion: ENVD_VERSION,
      volumeMounts: [],
    }
    if (record.alias) body.alias = record.alias
    return body
  }

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

  /** Applies fail/latency rules; true when the call was answered by a fault. */
  async function applyFault(
    operation: FaultOperation,
    sandboxId: string | undefined,
    response: ServerResponse,
  ) {
    const decision = rules.take(operation, sandboxId)
    if (decision.delayMs > 0) {
      events.record('fault-trigger', sandboxId, { fault: 'latency', operation, ms: decision.delayMs })
      await sleep(decision.delayMs)
    }
    if (decision.failure) {
      events.record('fault-trigger', sandboxId, { fault: 'fail', operation, status: decision.failure.status })
      sendJson(response, decision.failure.status, decision.failure.body, decision.failure.headers)
      return true
    }
    return false
  }

  function runningCount(): number {
    let count = 0
    for (const sandbox of sandboxes.values()) if (sandbox.record.state === 'running') count++
    return count
  }

  // ---- REST control plane -------------------------------------------------------------------------------

  async function createSandbox(body: Json, response: ServerResponse): Promise<void> {
    const started = performance.now()
    const templateId = body.templateID
    if (typeof templateId !== 'string' || templateId.length === 0)
      throw new RestError(400, 'templateID is required')
    if (!templates.has(templateId)) {
      throw new RestError(
        400,
        `unknown template '${templateId}' (this host serves: ${[...templates].join(', ')})`,
      )
    }
    const timeout = timeoutSeconds(body.timeout)
    const metadata = stringMap(body.metadata, 'metadata')
    const envVars = stringMap(body.envVars, 'envVars')
    const autoPause = body.autoPause === true
    const autoResume =
      typeof body.autoResume === 'object' && body.autoResume !== null
        ? (body.autoResume as Json).enabled === true
        : body.autoResume === true
    const allowInternet = body.allow_internet_access === true
    if (runningCount() >= settings.maxSandboxes) {
      throw new RestError(
        429,
        `this host runs at most ${settings.maxSandboxes} sandboxes at once; kill or pause one`,
      )
    }
    const sandboxId = newSandboxId()
    const rootDir = join(stateDir, 'sandboxes', sandboxId)
    mkdirSync(join(rootDir, 'home/user'), { recursive: true })
    mkdirSync(join(rootDir, 'tmp'), { recursive: true, mode: 0o1777 })
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
      autoPause,
      autoPauseMemory: body.autoPauseMemory !== false,
      autoResume,
      allowInternetAccess: allowInternet,
      rootDir,
      memoryLost: false,
      pauses: [],
    }
    if (typeof body.alias === 'string') record.alias = body.alias
    const sandbox = makeSandbox(record)
    try {
      await sandbox.runtime.boot()
    } catch (error) {
      await sandbox.runtime.destroy().catch(() => {})
      sandbox.runtime.removeStorage()
      throw new RestError(500, `could not start the sandbox: ${(error as Error).message}`)
    }
    sandboxes.set(sandboxId, sandbox)
    saveRegistry()
    scheduleTimeout(sandbox)
    events.record('sandbox-create', sandboxId, { templateId, createMs: performance.now() - started })
    sendJson(response, 201, sandboxJson(sandbox))
  }

  function lookup(sandboxId: string): Sandbox {
    const sandbox = sandboxes.get(sandboxId)
    if (!sandbox) throw new RestError(404, `sandbox ${sandboxId} not found`)
    return sandbox
  }

  async function connectSandbox(sandboxId: string, body: Json, response: ServerResponse): Promise<void> {
    let sandbox = lookup(sandboxId)
    const timeout = timeoutSeconds(body.timeout)
    const memory = body.memory !== false
    await sandbox.serialize(async () => {
      if (sandboxes.get(sandbox.id) !== sandbox) throw new RestError(404, `sandbox ${sandboxId} not found`)
      if (pendingIdChanges.has(sandbox.id)) {
        const newId = pendingIdChanges.get(sandbox.id) ?? newSandboxId()
        pendingIdChanges.delete(sandbox.id)
        const oldId = sandbox.id
        sandboxes.delete(oldId)
        sandbox.record.sandboxId = newId
        sandboxes.set(newId, sandbox)
        saveRegistry()
        events.record('fault-trigger', oldId, {
          fault: 'change-id',
          operation: 'connect',
          newSandboxId: newId,
        })
        sandbox = sandboxes.get(newId) ?? sandbox
      }
      const timeoutMs = timeout === undefined ? settings.defaultTimeoutMs : timeout * 1000
      if (sandbox.record.state === 'running') {
        sandbox.record.endAt = Math.max(sandbox.record.endAt, Date.now() + timeoutMs)
        saveRegistry()
        scheduleTimeout(sandbox)
        events.record('sandbox-connect', sandbox.id, { resumed: false })
        sendJson(response, 200, sandboxJson(sandbox))
        return
      }
      await doResume(sandbox, memory, timeoutMs, 'connect')
      events.record('sandbox-connect', sandbox.id, { resumed: true })
      sendJson(response, 201, sandboxJson(sandbox))
    })
  }

  async function pauseSandbox(sandboxId: string, body: Json, response: ServerResponse): Promise<void> {
    const sandbox = lookup(sandboxId)
    await sandbox.serialize(async () => {
      if (sandboxes.get(sandbox.id) !== sandbox) throw new RestError(404, `sandbox ${sandboxId} not found`)
      if (sandbox.record.state === 'paused')
        throw new RestError(409, `sandbox ${sandboxId} is already paused`)
      const mode: PauseMode =
        body.memory === false && sandbox.pauseMode === 'memory' ? 'filesystem' : sandbox.pauseMode
      await doPause(sandbox, mode, 'api')
      sendJson(response, 204, undefined)
    })
  }

  async function killSandbox(sandboxId: string, response: ServerResponse): Promise<void> {
    const sandbox = lookup(sandboxId)
    await sandbox.serialize(async () => {
      if (sandboxes.get(sandbox.id) !== sandbox) throw new RestError(404, `sandbox ${sandboxId} not found`)
      await destroySandbox(sandbox, 'api')
    })
    sendJson(response, 204, undefined)
  }

  function listSandboxesRest(url: URL, response: ServerResponse, legacy: boolean): void {
    const states = new Set(
      url.searchParams
        .getAll('state')
        .flatMap((value) => value.split(','))
        .map((value) => value.trim())
        .filter(Boolean),
    )
    for (const state of states) {
      if (state !== 'running' && state !== 'paused') throw new RestError(400, `unknown state '${state}'`)
    }
    if (legacy && states.size === 0) states.add('running')
    const metadataFilter: Record<string, string> = {}
    for (const raw of url.searchParams.getAll('metadata')) {
      for (const [key, value] of new URLSearchParams(raw)) {
        metadataFilter[safeDecode(key)] = safeDecode(value)
      }
    }
    const template = url.searchParams.get('template')
    const startedAfter = url.searchParams.get('startedAfter')
    const startedAfterMs = startedAfter ? Date.parse(startedAfter) : undefined
    const limitRaw = url.searchParams.get('limit')
    const limit = limitRaw === null ? 100 : Number(limitRaw)
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw new RestError(400, 'limit must be 1-1000')
    const order = url.searchParams.get('order') === 'asc' ? 1 : -1
    let matches = [...sandboxes.values()].filter((sandbox) => {
      const record = sandbox.record
      if (states.size > 0 && !states.has(record.state)) return false
      if (template && record.templateId !== template) return false
      if (startedAfterMs !== undefined && record.startedAt <= startedAfterMs) return false
      return Object.entries(metadataFilter).every(([key, value]) => record.metadata[key] === value)
    })
    matches.sort((a, b) => order * (a.record.startedAt - b.record.startedAt) || a.id.localeCompare(b.id))
    const token = url.searchParams.get('nextToken')
    if (token) {
      let after: { startedAt: number; id: string }
      try {
        after = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
          startedAt: number
          id: string
        }
      } catch {
        throw new RestError(400, 'nextToken is not a token this host issued')
      }
      matches = matches.filter(
        (sandbox) =>
          order * (sandbox.record.startedAt - after.startedAt) > 0 ||
          (sandbox.record.startedAt === after.startedAt && sandbox.id.localeCompare(after.id) > 0),
      )
    }
    const page = matches.slice(0, limit)
    const headers: Record<string, string> = {}
    const last = page.at(-1)
    if (matches.length > limit && last) {
      headers['x-next-token'] = Buffer.from(
        JSON.stringify({ startedAt: last.record.startedAt, id: last.id }),
      ).toString('base64url')
    }
    sendJson(response, 200, page.map(listedJson), headers)
  }

  async function handleRest(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const key = header(request, 'x-api-key')
    if (!key || !safeEqual(key, apiKey)) {
      sendError(response, 401, 'missing or invalid API key (send X-API-KEY)')
      return
    }
    const method = request.method ?? 'GET'
    const parts = url.pathname.split('/').filter(Boolean)
    const versioned = parts[0] === 'v2'
    const path = versioned ? parts.slice(1) : parts
    if (path[0] !== 'sandboxes') throw new RestError(404, `no route ${method} ${url.pathname}`)
    const sandboxId = path[1]
    const action = path[2]
    if (sandboxId !== undefined && (sandboxId.length > 128 || !/^[A-Za-z0-9_-]+$/.test(sandboxId))) {
      throw new RestError(404, `sandbox ${sandboxId.slice(0, 64)} not found`)
    }
    if (sandboxId === undefined) {
      if (method === 'POST') {
        const body = parseJsonBody(await readBody(request, JSON_LIMIT))
        if (await applyFault('create', undefined, response)) return
        return createSandbox(body, response)
      }
      if (method === 'GET') return listSandboxesRest(url, response, !versioned)
    } else if (action === undefined) {
      if (method === 'GET') {
        sendJson(response, 200, detailJson(lookup(sandboxId)))
        return
      }
      if (method === 'DELETE') {
        if (await applyFault('kill', sandboxId, response)) return
        return killSandbox(sandboxId, response)
      }
    } else if (method === 'POST' && path.length === 3) {
      const body = parseJsonBody(await readBody(request, JSON_LIMIT))
      switch (action) {
        case 'connect':
        case 'resume': {
          if (await applyFault('connect', sandboxId, response)) return
          return connectSandbox(sandboxId, body, response)
        }
        case 'pause':
          if (await applyFault('pause', sandboxId, response)) return
          return pauseSandbox(sandboxId, body, response)
        case 'timeout':
        case 'refreshes': {
          if (await applyFault('setTimeout', sandboxId, response)) return
          const sandbox = lookup(sandboxId)
          const seconds = timeoutSeconds(action === 'timeout' ? body.timeout : body.duration)
          if (seconds === undefined) throw new RestError(400, 'timeout is required')
          sandbox.record.endAt = Date.now() + seconds * 1000
          saveRegistry()
          scheduleTimeout(sandbox)
          events.record('sandbox-set-timeout', sandbox.id, { timeoutMs: seconds * 1000 })
          sendJson(response, 204, undefined)
          return
        }
      }
    } else if (method === 'GET' && action === 'metrics' && path.length === 3) {
      lookup(sandboxId)
      sendJson(response, 200, [])
      return
    }
    throw new RestError(404, `no route ${method} ${url.pathname}`)
  }

  // ---- sandbox traffic (envd + interpreter) -------------------------------------------------------------

  async function handleSandboxTraffic(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    sandboxId: string,
  ): Promise<void> {
    const port = Number(header(request, 'e2b-sandbox-port') ?? ENVD_PORT)
    const isRpc =
      url.pathname.startsWith('/process.Process/') || url.pathname.startsWith('/filesystem.Filesystem/')
    const method = url.pathname.split('/')[2] ?? ''
    const streaming = isRpc && (method === 'Start' || method === 'Connect' || method === 'WatchDir')
    const fail = (status: number, code: ConnectError['code'], message: string) => {
      if (isRpc && streaming) openServerStream(response).end(new ConnectError(code, message))
      else if (isRpc) writeUnaryError(response, new ConnectError(code, message))
      else sendError(response, status, message)
    }
    const sandbox = sandboxes.get(sandboxId)
    if (!sandbox) {
      // What E2B's edge answers for a sandbox that is gone: 502, which the SDK reads as "not running".
      sendError(response, 502, `sandbox ${sandboxId.slice(0, 64)} not found`)
      return
    }
    const token = header(request, 'x-access-token')
    // @e2b/code-interpreter sends X-Access-Token only with /execute; its /contexts calls carry just the
    // E2B-Traffic-Access-Token, which is accepted on the interpreter port only.
    const traffic = port === INTERPRETER_PORT ? header(request, 'e2b-traffic-access-token') : undefined
    const trafficOk = traffic !== undefined && safeEqual(traffic, trafficTokenOf(sandbox))
    if (!trafficOk && (!token || !safeEqual(token, sandbox.record.envdAccessToken))) {
      fail(401, 'unauthenticated', 'missing or invalid access token for this sandbox')
      return
    }
    if (port !== ENVD_PORT && port !== INTERPRETER_PORT) {
      sendError(response, 502, `nothing listens on port ${port} of sandbox ${sandboxId}`)
      return
    }
    // Uploads stream from the request to disk (handleFileUpload), everything else is small and read whole.
    const isUpload = url.pathname === '/files' && request.method === 'POST' && port === ENVD_PORT
    const body = isUpload ? Buffer.alloc(0) : await readBody(request, JSON_LIMIT * 16)
    if (sandbox.record.state === 'paused') {
      if (!sandbox.record.autoResume) {
        sendError(response, 502, `sandbox ${sandboxId} is paused; connect to resume it`)
        return
      }
      await sandbox.serialize(async () => {
        if (sandbox.record.state === 'paused') {
          await doResume(sandbox, true, settings.defaultTimeoutMs, 'auto-resume')
        }
      })
    }
    if (await applyFault(port === INTERPRETER_PORT ? 'execute' : 'envd', sandbox.id, response)) return
    if (port === INTERPRETER_PORT) {
      await sandbox.runtime.boot()
      await interpreterOf(sandbox).handle(request, response, body)
      return
    }
    try {
      if (isRpc) {
        if (url.pathname.startsWith('/process.Process/')) {
          await handleProcessRpc(method, sandbox, events, request, response, body)
        } else {
          await handleFilesystemRpc(method, sandbox, request, response, body)
        }
        return
      }
      if (url.pathname === '/health') {
        sendJson(response, 204, undefined)
        return
      }
      if (url.pathname === '/files') {
        if (request.method === 'GET') return await handleFileDownload(sandbox, url, request, response)
        if (request.method === 'POST') return await handleFileUpload(sandbox, url, request, response, uploads)
      }
      sendError(response, 404, `no envd route ${request.method} ${url.pathname}`)
    } catch (error) {
      if (error instanceof ConnectError) {
        if (streaming && !response.headersSent) openServerStream(response).end(error)
        else writeUnaryError(response, error)
        return
      }
      if (error instanceof HttpError) {
        sendJson(response, error.status, { code: error.status, message: error.message }, error.headers)
        return
      }
      throw error
    }
  }

  // ---- /_local admin ------------------------------------------------------------------------------------

  async function handleAdmin(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const key = header(request, 'x-api-key')
    if (!key || !safeEqual(key, apiKey)) {
      sendError(response, 401, 'missing or invalid API key (send X-API-KEY)')
      return
    }
    const parts = url.pathname.split('/').filter(Boolean).slice(1)
    const method = request.method ?? 'GET'
    const body = method === 'POST' ? parseJsonBody(await readBody(request, JSON_LIMIT)) : {}
    if (parts[0] === 'events' && method === 'GET') {
      const type = url.searchParams.get('type') ?? undefined
      const sandboxId = url.searchParams.get('sandboxId') ?? undefined
      sendJson(response, 200, events.list({ ...(type ? { type } : {}), ...(sandboxId ? { sandboxId } : {}) }))
      return
    }
    if (parts[0] === 'faults') {
      if (method === 'DELETE' && parts.length === 1) {
        faults.clear()
        sendJson(response, 204, undefined)
        return
      }
      if (method === 'GET' && parts.length === 1) {
        sendJson(response, 200, faults.list())
        return
      }
      if (method === 'POST' && (parts[1] === 'fail' || parts[1] === 'latency')) {
        if (!isFaultOperation(body.operation))
          throw new RestError(400, 'operation must be a fault operation name')
        const count = body.count === undefined ? undefined : Number(body.count)
        if (count !== undefined && (!Number.isInteger(count) || count < 1)) {
          throw new RestError(400, 'count must be a positive integer')
        }
        const sandboxId = typeof body.sandboxId === 'string' ? body.sandboxId : undefined
        if (parts[1] === 'fail') {
          const status = body.status === undefined ? 500 : Number(body.status)
          if (!Number.isInteger(status) || status < 400 || status > 599)
            throw new RestError(400, 'status must be 400-599')
          faults.failNext(body.operation, {
            status,
            ...(count === undefined ? {} : { count }),
            ...(body.body === undefined ? {} : { body: body.body }),
            ...(sandboxId === undefined ? {} : { sandboxId }),
            ...(body.headers === undefined ? {} : { headers: stringMap(body.headers, 'headers') }),
          })
        } else {
          const ms = Number(body.ms)
          if (!Number.isFinite(ms) || ms < 0 || ms > 600_000) throw new RestError(400, 'ms must be 0-600000')
          faults.addLatency(body.operation, ms, {
            ...(count === undefined ? {} : { count }),
            ...(sandboxId === undefined ? {} : { sandboxId }),
          })
        }
        sendJson(response, 204, undefined)
        return
      }
    }
    if (parts[0] === 'restart' && method === 'POST') {
      // Answer first: the restart drops every open connection, this one included.
      response.once('finish', () => setImmediate(() => void faults.restart()))
      sendJson(response, 202, { restarting: true })
      return
    }
    if (parts[0] === 'sandboxes' && parts[1]) {
      const sandboxId = parts[1]
      if (method === 'GET' && parts.length === 2) {
        const view = host.getSandbox(sandboxId)
        if (!view) throw new RestError(404, `sandbox ${sandboxId} not found`)
        sendJson(response, 200, view)
        return
      }
      if (method === 'POST') {
        switch (parts[2]) {
          case 'expire':
            await faults.expire(sandboxId)
            sendJson(response, 204, undefined)
            return
          case 'drop-memory':
            await faults.dropMemory(sandboxId)
            sendJson(response, 204, undefined)
            return
          case 'kill-process': {
            const pid = body.pid === undefined ? undefined : Number(body.pid)
            sendJson(response, 200, { pid: await faults.killProcess(sandboxId, pid) })
            return
          }
          case 'change-id':
            faults.changeIdOnNextConnect(sandboxId, typeof body.newId === 'string' ? body.newId : undefined)
            sendJson(response, 204, undefined)
            return
        }
      }
    }
    throw new RestError(404, `no admin route ${method} ${url.pathname}`)
  }

  // ---- faults ---------------------------------------------------------------------------------------------

  function faultTarget(sandboxId: string): Sandbox {
    const sandbox = sandboxes.get(sandboxId)
    if (!sandbox) {
      throw new SandkeepError({
        code: SandkeepErrorCode.SANDBOX_NOT_FOUND,
        message: `sandbox ${sandboxId} is not on this host`,
        sandboxId,
      })
    }
    return sandbox
  }

  const faults: LocalE2BFaults = {
    failNext(operation, failOptions = {}) {
      if (!isFaultOperation(operation)) throw invalidFault(`unknown fault operation ${String(operation)}`)
      rules.addFailure(operation, failOptions)
      events.record('fault-inject', failOptions.sandboxId, {
        fault: 'fail',
        operation,
        count: failOptions.count ?? 1,
        status: failOptions.status ?? 500,
      })
    },
    addLatency(operation, ms, latencyOptions = {}) {
      if (!isFaultOperation(operation)) throw invalidFault(`unknown fault operation ${String(operation)}`)
      rules.addLatency(operation, ms, latencyOptions)
      events.record('fault-inject', latencyOptions.sandboxId, {
        fault: 'latency',
        operation,
        ms,
        count: latencyOptions.count ?? null,
      })
    },
    clear() {
      rules.clear()
      events.record('fault-clear', undefined, {})
    },
    list() {
      return rules.list()
    },
    async expire(sandboxId) {
      const sandbox = faultTarget(sandboxId)
      events.record('fault-inject', sandboxId, { fault: 'expire' })
      await sandbox.serialize(async () => {
        if (sandbox.record.state !== 'paused') {
          throw invalidFault(`sandbox ${sandboxId} is not paused; only a paused sandbox can expire`)
        }
        await destroySandbox(sandbox, 'expired')
        events.record('sandbox-expire', sandboxId, { reason: 'fault' })
      })
    },
    async dropMemory(sandboxId) {
      const sandbox = faultTarget(sandboxId)
      events.record('fault-inject', sandboxId, { fault: 'drop-memory' })
      await sandbox.serialize(async () => {
        const killed = [...sandbox.processes.keys()]
        await sandbox.stopProcesses('lost its memory')
        if (sandbox.record.state === 'paused') sandbox.record.memoryLost = true
        saveRegistry()
        events.record('fault-trigger', sandboxId, { fault: 'drop-memory', killedPids: killed })
      })
    },
    async killProcess(sandboxId, pid) {
      const sandbox = faultTarget(sandboxId)
      const entry =
        pid === undefined
          ? [...sandbox.processes.values()]
              .filter((candidate) => !candidate.ended)
              .sort((a, b) => a.startedAt - b.startedAt)[0]
          : sandbox.processes.get(pid)
      if (!entry)
        throw new RestError(404, `no process ${pid ?? ''} in sandbox ${sandboxId}`.replace('  ', ' '))
      events.record('fault-inject', sandboxId, { fault: 'kill-process', pid: entry.pid })
      const exited = new Promise((resolve) => entry.spawned.child.once('exit', resolve))
      entry.spawned.child.kill('SIGKILL')
      if (sandbox.runtime.frozen) {
        // A frozen process dies when thawed; the sandbox stays paused, so the kill is recorded as pending.
        events.record('fault-trigger', sandboxId, { fault: 'kill-process', pid: entry.pid, pending: true })
        return entry.pid
      }
      await exited
      events.record('fault-trigger', sandboxId, { fault: 'kill-process', pid: entry.pid })
      return entry.pid
    },
    async restart() {
      events.record('fault-inject', undefined, { fault: 'restart' })
      const started = performance.now()
      server.closeAllConnections()
      for (const sandbox of sandboxes.values()) {
        if (sandbox.timeoutTimer) clearTimeout(sandbox.timeoutTimer)
        for (const entry of sandbox.processes.values()) entry.subscribers.clear()
        sandbox.processes.clear()
        sandbox.interpreter?.reset()
        await sandbox.interpreter?.close().catch(() => {})
        await sandbox.runtime.destroy()
      }
      for (const timer of retentionTimers.values()) clearTimeout(timer)
      retentionTimers.clear()
      sandboxes.clear()
      pendingIdChanges.clear()
      loadRegistry('host-restart')
      events.record('host-restart', undefined, {
        restartMs: performance.now() - started,
        sandboxes: sandboxes.size,
      })
    },
    changeIdOnNextConnect(sandboxId, newId) {
      faultTarget(sandboxId)
      if (newId !== undefined && (!/^[A-Za-z0-9_-]{1,64}$/.test(newId) || sandboxes.has(newId))) {
        throw invalidFault('newId must be a free id of 1-64 letters, digits, - or _')
      }
      pendingIdChanges.set(sandboxId, newId)
      events.record('fault-inject', sandboxId, {
        fault: 'change-id',
        ...(newId ? { newSandboxId: newId } : {}),
      })
    },
  }

  // ---- server ---------------------------------------------------------------------------------------------

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://local')
    const sandboxId = header(request, 'e2b-sandbox-id')
    try {
      if (sandboxId) return await handleSandboxTraffic(request, response, url, sandboxId)
      if (url.pathname.startsWith('/_local/')) return await handleAdmin(request, response, url)
      if (url.pathname === '/health') {
        sendJson(response, 200, { status: 'ok' })
        return
      }
      return await handleRest(request, response, url)
    } catch (error) {
      if (error instanceof RestError) {
        sendError(response, error.status, error.message)
        return
      }
      if (error instanceof HttpError) {
        sendJson(response, error.status, { code: error.status, message: error.message }, error.headers)
        return
      }
      if (SandkeepError.isInstance(error)) {
        sendError(response, error.code === SandkeepErrorCode.SANDBOX_NOT_FOUND ? 404 : 400, error.message)
        return
      }
      events.record('host-error', sandboxId, {
        path: url.pathname,
        error: (error as Error)?.message ?? String(error),
      })
      sendError(response, 500, `internal error: ${(error as Error)?.message ?? String(error)}`)
    }
  }

  const server: Server = createServer((request, response) => {
    void route(request, response)
  })
  server.keepAliveTimeout = 30_000

  loadRegistry('host-restart')

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(settings.port, settings.hostname, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const baseUrl = `http://${urlHost}:${address.port}`

  async function close(): Promise<void> {
    if (closed) return
    closed = true
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    for (const sandbox of sandboxes.values()) {
      if (sandbox.timeoutTimer) clearTimeout(sandbox.timeoutTimer)
      await sandbox.interpreter?.close().catch(() => {})
      await sandbox.runtime.destroy().catch(() => {})
      if (sandbox.record.state === 'running') {
        sandbox.record.pauses.push({
          mode: 'filesystem',
          pausedAt: Date.now(),
          pauseMs: 0,
          reason: 'host-close',
        })
        sandbox.record.state = 'paused'
        sandbox.record.pausedAt = Date.now()
      }
      sandbox.record.memoryLost = true
    }
    for (const timer of retentionTimers.values()) clearTimeout(timer)
    if (ownsStateDir) rmSync(stateDir, { recursive: true, force: true })
    else saveRegistry()
    sandboxes.clear()
    events.record('host-close', undefined, {})
  }

  const host: LocalE2BHost = {
    apiUrl: baseUrl,
    sandboxUrl: baseUrl,
    apiKey,
    env: {
      E2B_API_URL: baseUrl,
      E2B_SANDBOX_URL: baseUrl,
      E2B_API_KEY: apiKey,
      E2B_DOMAIN: `${urlHost}:${address.port}`,
    },
    events,
    faults,
    stateDir,
    port: address.port,
    hostname: settings.hostname,
    isolation: support.isolation,
    freezer: support.freezer,
    pauseMode: settings.pauseMode,
    getSandbox(id) {
      return sandboxes.get(id)?.view(support.isolation)
    },
    listSandboxes() {
      return [...sandboxes.values()].map((sandbox) => sandbox.view(support.isolation))
    },
    close,
    [Symbol.asyncDispose]: close,
  }
  events.record('host-start', undefined, {
    port: address.port,
    isolation: support.isolation,
    freezer: support.freezer,
  })
  return host
}

/** A registry record the host can serve (anything else is kept untouched in the file). */
function isUsableRecord(value: unknown): value is SandboxRecord {
  const record = value as Partial<SandboxRecord> | null
  return (
    typeof record === 'object' &&
    record !== null &&
    typeof record.sandboxId === 'string' &&
    /^[A-Za-z0-9_-]{1,128}$/.test(record.sandboxId) &&
    typeof record.rootDir === 'string' &&
    typeof record.envdAccessToken === 'string' &&
    typeof record.templateId === 'string' &&
    (record.state === 'running' || record.state === 'paused') &&
    Array.isArray(record.pauses) &&
    typeof record.metadata === 'object' &&
    record.metadata !== null &&
    typeof record.envVars === 'object' &&
    record.envVars !== null &&
    typeof record.startedAt === 'number' &&
    typeof record.endAt === 'number'
  )
}

function invalidFault(message: string): SandkeepError {
  return new SandkeepError({ code: SandkeepErrorCode.INVALID_ARGUMENT, message })
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

export type { HostEvent }
