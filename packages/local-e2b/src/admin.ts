// The `/_local/` admin routes (same X-API-KEY): the event log, fault rules, restart, and per-sandbox
// introspection and faults. The HTTP face of `host.events`, `host.faults` and `host.getSandbox`.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { HostEventLog } from './events.js'
import { type HostFaults, isFaultOperation } from './faults.js'
import { checkApiKey, HttpError, type Json, readJson, sendJson, stringMap } from './http.js'
import type { SandboxView } from './sandbox.js'

export interface AdminOptions {
  apiKey: string
  events: HostEventLog
  faults: HostFaults
  getSandbox: (sandboxId: string) => SandboxView | undefined
}

/** Serves one `/_local/…` request. */
export async function handleAdmin(
  options: AdminOptions,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
): Promise<void> {
  if (!checkApiKey(request, response, options.apiKey)) return
  const parts = url.pathname.split('/').filter(Boolean).slice(1)
  const method = request.method ?? 'GET'
  const body = method === 'POST' ? await readJson(request) : {}
  if (parts[0] === 'events' && method === 'GET') {
    const type = url.searchParams.get('type') ?? undefined
    const sandboxId = url.searchParams.get('sandboxId') ?? undefined
    const filter = { ...(type ? { type } : {}), ...(sandboxId ? { sandboxId } : {}) }
    return sendJson(response, 200, options.events.list(filter))
  }
  if (parts[0] === 'faults' && (await faultRules(options.faults, method, parts, body, response))) return
  if (parts[0] === 'restart' && method === 'POST') {
    // Answer first: the restart drops every open connection, this one included.
    response.once('finish', () => setImmediate(() => void options.faults.restart()))
    return sendJson(response, 202, { restarting: true })
  }
  if (parts[0] === 'sandboxes' && parts[1]) {
    if (await sandboxRoute(options, method, parts[1], parts, body, response)) return
  }
  throw new HttpError(404, `no admin route ${method} ${url.pathname}`)
}

/** `/_local/faults…`; false when no route matched. */
async function faultRules(
  faults: HostFaults,
  method: string,
  parts: string[],
  body: Json,
  response: ServerResponse,
): Promise<boolean> {
  if (method === 'DELETE' && parts.length === 1) {
    faults.clear()
    sendJson(response, 204, undefined)
    return true
  }
  if (method === 'GET' && parts.length === 1) {
    sendJson(response, 200, faults.list())
    return true
  }
  if (method !== 'POST' || (parts[1] !== 'fail' && parts[1] !== 'latency')) return false
  if (!isFaultOperation(body.operation)) throw new HttpError(400, 'operation must be a fault operation name')
  const count = body.count === undefined ? undefined : Number(body.count)
  if (count !== undefined && (!Number.isInteger(count) || count < 1)) {
    throw new HttpError(400, 'count must be a positive integer')
  }
  const sandboxId = typeof body.sandboxId === 'string' ? body.sandboxId : undefined
  const scope = {
    ...(count === undefined ? {} : { count }),
    ...(sandboxId === undefined ? {} : { sandboxId }),
  }
  if (parts[1] === 'fail') {
    const status = body.status === undefined ? 500 : Number(body.status)
    if (!Number.isInteger(status) || status < 400 || status > 599)
      throw new HttpError(400, 'status must be 400-599')
    faults.failNext(body.operation, {
      status,
      ...scope,
      ...(body.body === undefined ? {} : { body: body.body }),
      ...(body.headers === undefined ? {} : { headers: stringMap(body.headers, 'headers') }),
    })
  } else {
    const ms = Number(body.ms)
    if (!Number.isFinite(ms) || ms < 0 || ms > 600_000) throw new HttpError(400, 'ms must be 0-600000')
    faults.addLatency(body.operation, ms, scope)
  }
  sendJson(response, 204, undefined)
  return true
}

/** `/_local/sandboxes/{id}[/<fault>]`; false when no route matched. */
async function sandboxRoute(
  options: AdminOptions,
  method: string,
  sandboxId: string,
  parts: string[],
  body: Json,
  response: ServerResponse,
): Promise<boolean> {
  const { faults } = options
  if (method === 'GET' && parts.length === 2) {
    const view = options.getSandbox(sandboxId)
    if (!view) throw new HttpError(404, `sandbox ${sandboxId} not found`)
    sendJson(response, 200, view)
    return true
  }
  if (method !== 'POST') return false
  switch (parts[2]) {
    case 'expire':
      await faults.expire(sandboxId)
      break
    case 'drop-memory':
      await faults.dropMemory(sandboxId)
      break
    case 'kill-process': {
      const pid = body.pid === undefined ? undefined : Number(body.pid)
      sendJson(response, 200, { pid: await faults.killProcess(sandboxId, pid) })
      return true
    }
    case 'change-id':
      faults.changeIdOnNextConnect(sandboxId, typeof body.newId === 'string' ? body.newId : undefined)
      break
    default:
      return false
  }
  sendJson(response, 204, undefined)
  return true
}
