// Request/response helpers shared by the control plane, the admin routes, envd's plain endpoints and the
// code interpreter: JSON answers, bounded bodies, field checks, and the API key / token comparisons.
import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

export type Json = Record<string, unknown>

/** Most bytes of a JSON request body (control plane, admin, interpreter calls). */
export const JSON_LIMIT = 1024 * 1024

/** A failure answered as `{code, message}` with this HTTP status (and extra headers such as Retry-After). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra response headers (Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
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

/** `{code, message}` with the status, E2B's error shape. */
export function sendError(
  response: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(response, status, { code: status, message }, headers)
}

/** Reads a whole request body; past `limit` bytes it rejects with a 400 and drains the rest. */
export function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let failed = false
    request.on('data', (chunk: Buffer) => {
      if (failed) return
      size += chunk.length
      if (size > limit) {
        failed = true
        reject(new HttpError(400, `request body is larger than ${limit} bytes`))
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

/** Reads a JSON object body of at most {@link JSON_LIMIT} bytes; an empty body is `{}`. */
export async function readJson(request: IncomingMessage): Promise<Json> {
  return parseJsonBody(await readBody(request, JSON_LIMIT))
}

/** Parses a JSON object body; an empty body is `{}`. */
export function parseJsonBody(body: Buffer): Json {
  if (body.length === 0) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString('utf8'))
  } catch {
    throw new HttpError(400, 'request body is not valid JSON')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new HttpError(400, 'request body must be a JSON object')
  }
  return parsed as Json
}

/** An object of strings (metadata, envVars, headers); absent is `{}`. */
export function stringMap(value: unknown, what: string): Record<string, string> {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value))
    throw new HttpError(400, `${what} must be an object of strings`)
  const out: Record<string, string> = {}
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string') throw new HttpError(400, `${what}.${key} must be a string`)
    if (key.length === 0 || key.length > 256)
      throw new HttpError(400, `${what} keys must be 1-256 characters`)
    out[key] = entry
  }
  return out
}

/** A timeout in whole seconds (at most 30 days), or undefined when absent. */
export function timeoutSeconds(value: unknown, what = 'timeout'): number | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 86_400 * 30) {
    throw new HttpError(400, `${what} must be a whole number of seconds`)
  }
  return value
}

export function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** Constant-time comparison of two secrets. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** Checks `X-API-KEY`; answers 401 and returns false when it is missing or wrong. */
export function checkApiKey(request: IncomingMessage, response: ServerResponse, apiKey: string): boolean {
  const key = header(request, 'x-api-key')
  if (key && safeEqual(key, apiKey)) return true
  sendError(response, 401, 'missing or invalid API key (send X-API-KEY)')
  return false
}

/** decodeURIComponent that keeps a malformed escape as it is. */
export function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}
