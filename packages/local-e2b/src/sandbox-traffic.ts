// Requests addressed to a sandbox (the SDK's E2b-Sandbox-Id / E2b-Sandbox-Port headers): envd on port 49983
// (process and filesystem RPCs, /files, /health) and the code interpreter on port 49999. Checks the
// sandbox's access token, resumes an auto-resume sandbox, applies the envd/execute faults, then routes.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { ConnectError, openServerStream, writeUnaryError } from './connect-protocol.js'
import { handleFileDownload, handleFileUpload, UploadLimits } from './envd-files.js'
import { handleFilesystemRpc } from './envd-filesystem.js'
import { baseEnvironment, handleProcessRpc } from './envd-process.js'
import type { HostEventLog } from './events.js'
import type { HostFaults } from './faults.js'
import { header, JSON_LIMIT, readBody, safeEqual, sendError, sendJson } from './http.js'
import { createCodeInterpreter, kernelHostDirectory } from './interpreter/index.js'
import type { CodeInterpreter } from './interpreter/types.js'
import type { Lifecycle } from './lifecycle.js'
import type { ResolvedOptions } from './options.js'
import { SANDBOX_HOME } from './paths.js'
import type { SandboxRegistry } from './registry.js'
import { SANDBOX_KERNEL_DIR } from './runtime/namespace.js'
import type { RuntimeSupport } from './runtime/support.js'
import type { Sandbox } from './sandbox.js'

const ENVD_PORT = 49983
const INTERPRETER_PORT = 49999
/** RPC methods that answer with a server stream (their errors go in the stream's end frame). */
const STREAMING_METHODS = new Set(['Start', 'Connect', 'WatchDir'])

export interface SandboxTrafficOptions {
  settings: ResolvedOptions
  support: RuntimeSupport
  events: HostEventLog
  registry: SandboxRegistry
  lifecycle: Lifecycle
  faults: HostFaults
}

/** What one request is: which port, and for envd which RPC. */
interface Addressed {
  port: number
  /** `/process.Process/…` or `/filesystem.Filesystem/…`. */
  isRpc: boolean
  /** The RPC method name (`Start`, `Stat`…). */
  method: string
  streaming: boolean
}

export class SandboxTraffic {
  readonly #options: SandboxTrafficOptions
  readonly #uploads: UploadLimits
  readonly #kernelDir = kernelHostDirectory()

  constructor(options: SandboxTrafficOptions) {
    this.#options = options
    this.#uploads = new UploadLimits(
      options.settings.maxUploadBytes,
      options.settings.maxConcurrentUploadBytes,
    )
  }

  /** Serves one request for `sandboxId`. */
  async handle(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    sandboxId: string,
  ): Promise<void> {
    const port = Number(header(request, 'e2b-sandbox-port') ?? ENVD_PORT)
    const isRpc =
      url.pathname.startsWith('/process.Process/') || url.pathname.startsWith('/filesystem.Filesystem/')
    const method = url.pathname.split('/')[2] ?? ''
    const addressed: Addressed = { port, isRpc, method, streaming: isRpc && STREAMING_METHODS.has(method) }
    const sandbox = this.#options.registry.get(sandboxId)
    if (!sandbox) {
      // What E2B's edge answers for a sandbox that is gone: 502, which the SDK reads as "not running".
      sendError(response, 502, `sandbox ${sandboxId.slice(0, 64)} not found`)
      return
    }
    if (!this.#authorized(request, sandbox, port)) {
      const error = new ConnectError('unauthenticated', 'missing or invalid access token for this sandbox')
      if (addressed.streaming) openServerStream(response).end(error)
      else if (isRpc) writeUnaryError(response, error)
      else sendError(response, 401, error.message)
      return
    }
    if (port !== ENVD_PORT && port !== INTERPRETER_PORT) {
      sendError(response, 502, `nothing listens on port ${port} of sandbox ${sandboxId}`)
      return
    }
    // Uploads stream from the request to disk (handleFileUpload), everything else is small and read whole.
    const isUpload = url.pathname === '/files' && request.method === 'POST' && port === ENVD_PORT
    const body = isUpload ? Buffer.alloc(0) : await readBody(request, JSON_LIMIT * 16)
    if (!(await this.#ensureRunning(sandbox, response))) return
    const interpreter = port === INTERPRETER_PORT
    if (await this.#options.faults.apply(interpreter ? 'execute' : 'envd', sandbox.id, response)) return
    if (interpreter) {
      await sandbox.runtime.boot()
      await this.#interpreterOf(sandbox).handle(request, response, body)
      return
    }
    await this.#envd(sandbox, addressed, request, response, url, body)
  }

  /**
   * The sandbox's own access token; @e2b/code-interpreter sends X-Access-Token only with /execute, its
   * /contexts calls carry just the E2B-Traffic-Access-Token, which is accepted on the interpreter port only.
   */
  #authorized(request: IncomingMessage, sandbox: Sandbox, port: number): boolean {
    const traffic = port === INTERPRETER_PORT ? header(request, 'e2b-traffic-access-token') : undefined
    if (traffic !== undefined && safeEqual(traffic, sandbox.trafficAccessToken)) return true
    const token = header(request, 'x-access-token')
    return token !== undefined && safeEqual(token, sandbox.record.envdAccessToken)
  }

  /** A paused sandbox answers 502, unless it auto-resumes; false when the request was answered. */
  async #ensureRunning(sandbox: Sandbox, response: ServerResponse): Promise<boolean> {
    if (sandbox.record.state !== 'paused') return true
    if (!sandbox.record.autoResume) {
      sendError(response, 502, `sandbox ${sandbox.id} is paused; connect to resume it`)
      return false
    }
    await sandbox.serialize(async () => {
      if (sandbox.record.state === 'paused') {
        await this.#options.lifecycle.resume(
          sandbox,
          true,
          this.#options.settings.defaultTimeoutMs,
          'auto-resume',
        )
      }
    })
    return true
  }

  async #envd(
    sandbox: Sandbox,
    addressed: Addressed,
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    body: Buffer,
  ): Promise<void> {
    try {
      if (addressed.isRpc) {
        if (url.pathname.startsWith('/process.Process/')) {
          await handleProcessRpc(addressed.method, sandbox, this.#options.events, request, response, body)
        } else {
          await handleFilesystemRpc(addressed.method, sandbox, request, response, body)
        }
        return
      }
      if (url.pathname === '/health') return sendJson(response, 204, undefined)
      if (url.pathname === '/files') {
        if (request.method === 'GET') return await handleFileDownload(sandbox, url, request, response)
        if (request.method === 'POST')
          return await handleFileUpload(sandbox, url, request, response, this.#uploads)
      }
      sendError(response, 404, `no envd route ${request.method} ${url.pathname}`)
    } catch (error) {
      if (!(error instanceof ConnectError)) throw error
      if (addressed.streaming && !response.headersSent) openServerStream(response).end(error)
      else writeUnaryError(response, error)
    }
  }

  /** The sandbox's code interpreter, created on first use; its kernels run inside the sandbox. */
  #interpreterOf(sandbox: Sandbox): CodeInterpreter {
    if (sandbox.interpreter) return sandbox.interpreter
    const { support, events } = this.#options
    const isolated = support.isolation === 'bubblewrap'
    sandbox.interpreter = createCodeInterpreter({
      sandboxId: sandbox.id,
      kernelDir: isolated ? SANDBOX_KERNEL_DIR : this.#kernelDir,
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
}
