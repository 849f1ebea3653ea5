// The code interpreter of one sandbox: what E2B's code-interpreter server answers on port 49999 (`/execute`,
// `/contexts`, `/health`), with kernels written here (kernels/) instead of Jupyter. Each context owns one kernel
// process, started inside the sandbox through the host's spawner when its first cell arrives (or when the context
// is created or restarted), so the kernel is isolated, frozen and killed with the sandbox. This file routes;
// contexts.ts owns contexts and kernels, execute.ts runs cells, input.ts and output.ts shape the wire.
import { existsSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { fileURLToPath } from 'node:url'
import { HttpError, parseJsonBody, sendJson } from '../http.js'
import { ContextTable } from './contexts.js'
import { execute, sendText } from './execute.js'
import { chooseLanguage, readCwd } from './input.js'
import type { CodeInterpreter, CreateCodeInterpreter, InterpreterHost } from './types.js'

export type { CellOutcome, CellSink, KernelExit, KernelLanguage } from './kernel.js'
export { KernelProcess } from './kernel.js'
export type { CodeInterpreter, CreateCodeInterpreter, InterpreterHost, KernelSpawner } from './types.js'

/**
 * The `kernels/` directory of this package on the host (for a host that runs unisolated, or that binds it into
 * its sandboxes). Works from the sources (src/interpreter/) and from the build (dist/).
 */
export function kernelHostDirectory(): string {
  for (const relative of ['../kernels', '../../kernels']) {
    const candidate = fileURLToPath(new URL(relative, import.meta.url))
    if (existsSync(`${candidate}/python-kernel.py`)) return candidate
  }
  return fileURLToPath(new URL('../kernels', import.meta.url))
}

const methodNotAllowed = () => new HttpError(405, 'Method Not Allowed')

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** `POST /contexts`: like Jupyter, a new context has a running kernel at once; a bad cwd fails here. */
async function createContext(contexts: ContextTable, response: ServerResponse, body: Buffer): Promise<void> {
  const input = parseJsonBody(body)
  const choice = chooseLanguage(input.language)
  const cwd = readCwd(input.cwd)
  // A directory that is not there is the caller's mistake, told before any context exists.
  if (cwd !== undefined && !(await contexts.canEnter(cwd))) {
    throw new HttpError(
      400,
      `Failed to set working directory: ${cwd} is not a directory the sandbox's user can enter`,
    )
  }
  contexts.ensureDefaults()
  const context = contexts.add(choice, cwd)
  try {
    await contexts.ensureKernel(context)
  } catch (error) {
    contexts.remove(context, 'failed to start')
    throw new HttpError(500, `Failed to create the context: ${errorMessage(error)}`)
  }
  sendJson(response, 200, { id: context.id, language: context.language, cwd: context.cwd })
}

/** `POST /contexts/{id}/restart`: a fresh kernel (memory lost), the context kept. */
async function restartContext(contexts: ContextTable, response: ServerResponse, id: string): Promise<void> {
  const context = contexts.find(id)
  const previous = context.kernel
  contexts.forgetKernel(context, 'restart')
  if (previous) await Promise.race([previous.exited, new Promise((resolve) => setTimeout(resolve, 2_000))])
  try {
    await contexts.ensureKernel(context)
  } catch (error) {
    throw new HttpError(500, `Failed to restart context ${id}: ${errorMessage(error)}`)
  }
  sendJson(response, 200, null)
}

/** `/contexts/{id}[/restart]`. */
async function contextRoute(
  contexts: ContextTable,
  method: string,
  match: RegExpExecArray,
  response: ServerResponse,
): Promise<void> {
  let id: string
  try {
    id = decodeURIComponent(match[1] ?? '')
  } catch {
    throw new HttpError(404, 'Context not found')
  }
  if (match[2]) {
    if (method !== 'POST') throw methodNotAllowed()
    return restartContext(contexts, response, id)
  }
  if (method !== 'DELETE') throw methodNotAllowed()
  contexts.remove(contexts.find(id), 'context removed')
  sendJson(response, 200, null)
}

async function route(
  contexts: ContextTable,
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
): Promise<void> {
  const method = request.method ?? 'GET'
  const path = new URL(request.url ?? '/', 'http://interpreter').pathname
  if (path === '/health') {
    if (method !== 'GET') throw methodNotAllowed()
    return sendJson(response, 200, 'OK')
  }
  if (contexts.closed) throw new HttpError(502, 'the sandbox is gone')
  if (path === '/execute') {
    if (method !== 'POST') throw methodNotAllowed()
    return execute(contexts, response, body)
  }
  if (path === '/contexts') {
    if (method === 'POST') return createContext(contexts, response, body)
    if (method !== 'GET') throw methodNotAllowed()
    contexts.ensureDefaults()
    const listed = [...contexts.values()].map(({ id, language, cwd }) => ({ id, language, cwd }))
    return sendJson(response, 200, listed)
  }
  const match = /^\/contexts\/([^/]+)(\/restart)?$/.exec(path)
  if (match?.[1] !== undefined) return contextRoute(contexts, method, match, response)
  throw new HttpError(404, 'Not Found')
}

/**
 * The code interpreter of one sandbox (the server behind port 49999). Synchronous and without I/O: kernels start
 * with the first cell of their context. `host.spawner` is the only way it starts processes.
 */
export const createCodeInterpreter: CreateCodeInterpreter = (host: InterpreterHost): CodeInterpreter => {
  const contexts = new ContextTable(host)
  return {
    async handle(request, response, body) {
      try {
        await route(contexts, request, response, body)
      } catch (error) {
        sendText(response, error instanceof HttpError ? error.status : 500, errorMessage(error))
      }
    },
    reset: () => contexts.reset(),
    close: () => contexts.close(),
    dropRequests: () => contexts.dropRequests(),
  }
}
