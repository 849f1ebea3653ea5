// Requests addressed to a sandbox (edge.ts finds which, by host name or the SDK's E2b-Sandbox-Id /
// E2b-Sandbox-Port headers): envd on port 49983 (process and filesystem RPCs, /files, /health) and the code
// interpreter on port 49999; any other port is a server of the sandbox's own (user-ports.ts). Checks the
// sandbox's access token (or a signed /files URL), resumes an auto-resume sandbox, applies the envd/execute
// faults, then routes.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { ConnectError, openServerStream, writeUnaryError } from './connect-protocol.js'
import {
  ENVD_PORT,
  INTERPRETER_PORT,
  resumeForTraffic,
  type SandboxTarget,
  sandboxNotFound,
  sendAnswer,
} from './edge.js'
import { handleFileDownload, handleFileUpload, UploadLimits } from './envd-files.js'
import { handleFilesystemRpc } from './envd-filesystem.js'
import { baseEnvironment, handleProcessRpc } from './envd-process.js'
import { envdRefusal } from './envd-signing.js'
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
import type { UserPorts } from './user-ports.js'

/** RPC methods that answer with a server stream (their errors go in the stream's end frame). */
const STREAMING_METHODS = new Set(['Start', 'Connect', 'WatchDir'])

export interface SandboxTrafficOptions {
  settings: ResolvedOptions
  support: RuntimeSupport
  events: HostEventLog
  registry: SandboxRegistry
  lifecycle: Lifecycle
  faults: HostFaults
  userPorts: UserPorts
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

  /** Serves one request for a port of a sandbox. */
  async handle(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    target: SandboxTarget,
  ): Promise<void> {
    const { port, sandboxId } = target
    if (port !== ENVD_PORT && port !== INTERPRETER_PORT) {
      return this.#options.userPorts.handleRequest(request, response, target)
    }
    const isRpc =
      url.pathname.startsWith('/process.Process/') || url.pathname.startsWith('/filesystem.Filesystem/')
    const method = url.pathname.split('/')[2] ?? ''
    const addressed: Addressed = { port, isRpc, method, streaming: isRpc && STREAMING_METHODS.has(method) }
    const sandbox = this.#options.registry.get(sandboxId)
    if (!sandbox) {
      // What E2B's edge answers for a sandbox that is gone: 502, which the SDK reads as "not running".
      request.resume()
      sendAnswer(request, response, sandboxNotFound(sandboxId))
      return
    }
    const refusal =
      port === INTERPRETER_PORT
        ? this.#interpreterRefusal(request, url, sandbox)
        : envdRefusal(request, url, sandbox)
    if (refusal !== undefined) {
      request.resume()
      const error = new ConnectError('unauthenticated', refusal)
      if (addressed.streaming) openServerStream(response).end(error)
      else if (isRpc) writeUnaryError(response, error)
      else sendError(response, 401, refusal)
      return
    }
    // Uploads stream from the request to disk (handleFileUpload), everything else is small and read whole.
    const isUpload = url.pathname === '/files' && request.method === 'POST' && port === ENVD_PORT
    const body = isUpload ? Buffer.alloc(0) : await readBody(request, JSON_LIMIT * 16)
    const { lifecycle, settings } = this.#options
    if (!(await resumeForTraffic(sandbox, lifecycle, settings.defaultTimeoutMs))) {
      sendAnswer(request, response, sandboxNotFound(sandbox.id))
      return
    }
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
   * Why an interpreter request is refused, or undefined. As E2B's code-interpreter server: every route but
   * `GET /health` needs the sandbox's envd access token in X-Access-Token. The traffic token never counts
   * here: it is meant for the sandbox's own ports and is handed to browsers with their URLs.
   * (@e2b/code-interpreter 2.8's context calls send only the traffic token, and get 401, as on E2B.)
   */
  #interpreterRefusal(request: IncomingMessage, url: URL, sandbox: Sandbox): string | undefined {
    if (request.method === 'GET' && url.pathname === '/health') return undefined
    const token = header(request, 'x-access-token')
    if (token !== undefined && safeEqual(token, sandbox.record.envdAccessToken)) return undefined
    return token === undefined
      ? "the interpreter needs this sandbox's envd access token in X-Access-Token (the traffic access token opens only the sandbox's own ports)"
      : 'invalid access token for this sandbox'
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
    // Unisolated processes may still see the sandbox's directory as /home/user (runtime.sandboxHome).
    const sandboxPaths = sandbox.runtime.sandboxHome
    sandbox.interpreter = createCodeInterpreter({
      sandboxId: sandbox.id,
      kernelDir: isolated ? SANDBOX_KERNEL_DIR : this.#kernelDir,
      homeDir: sandboxPaths ? SANDBOX_HOME : sandbox.runtime.hostPathOf(SANDBOX_HOME),
      envs: { ...sandbox.record.envVars },
      emit: (type, detail) => events.record(type, sandbox.id, detail),
      spawner: {
        spawn(command, args, spawnOptions) {
          const cwd = sandboxPaths
            ? spawnOptions.cwd
            : spawnOptions.cwd.replace(sandbox.record.rootDir, '') || SANDBOX_HOME
          const child = sandbox.runtime.spawnNow(command, args, {
            cwd,
            env: {
              ...baseEnvironment(sandbox.runtime.defaultUser),
              ...sandbox.record.envVars,
              ...spawnOptions.env,
            },
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
