// Signed file URLs (`sandbox.downloadUrl` / `uploadUrl`), checked as envd checks them: `GET /files` and
// `POST /files` are the two envd routes that need no access-token header. Without one, the URL must carry
// `signature` = `v1_` + unpadded base64 of sha256(`<path>:<read|write>:<username>:<access token>[:<expiry>]`),
// with the `path` and `username` query values exactly as sent (empty when absent) and `signature_expiration`
// in Unix seconds, not yet past. A header token, when sent, must be the sandbox's. Failures are 401 with
// envd's messages. The SDK's signed URL names no sandbox (it is `<sandboxUrl>/files?…` when `sandboxUrl` is
// set), so such a request is matched to the sandbox whose token its signature was made with.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { HttpError, header, safeEqual } from './http.js'
import type { SandboxRegistry } from './registry.js'
import type { Sandbox } from './sandbox.js'

/** The operation a `/files` request is signed for; undefined for any other request. */
function signedOperation(method: string | undefined, url: URL): 'read' | 'write' | undefined {
  if (url.pathname !== '/files') return undefined
  if (method === 'GET') return 'read'
  if (method === 'POST') return 'write'
  return undefined
}

/** The signature of `/files` for this token, as the SDK computes it. */
export function fileSignature(
  path: string,
  operation: 'read' | 'write',
  username: string,
  accessToken: string,
  expiration: number | undefined,
): string {
  const parts = [path, operation, username, accessToken]
  if (expiration !== undefined) parts.push(String(expiration))
  return `v1_${createHash('sha256').update(parts.join(':')).digest('base64').replace(/=+$/, '')}`
}

/** `signature_expiration` as an integer; 400 for anything else, as envd's parameter binding answers. */
function expirationOf(url: URL): number | undefined {
  const raw = url.searchParams.get('signature_expiration')
  if (raw === null) return undefined
  if (!/^-?\d{1,18}$/.test(raw))
    throw new HttpError(400, 'Invalid format for parameter signature_expiration: not an integer')
  return Number(raw)
}

function signatureMatches(url: URL, operation: 'read' | 'write', accessToken: string): boolean {
  const given = url.searchParams.get('signature')
  if (given === null) return false
  const expected = fileSignature(
    url.searchParams.get('path') ?? '',
    operation,
    url.searchParams.get('username') ?? '',
    accessToken,
    expirationOf(url),
  )
  const left = Buffer.from(given)
  const right = Buffer.from(expected)
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * Why a request to the sandbox's envd may not go on (envd's 401 message), or undefined when it may: a header
 * token equal to the sandbox's; or, for `GET`/`POST /files` without one, a valid unexpired signature;
 * `GET /health` needs neither (envd exempts it). Throws HttpError 400 for a malformed expiry.
 */
export function envdRefusal(request: IncomingMessage, url: URL, sandbox: Sandbox): string | undefined {
  const accessToken = sandbox.record.envdAccessToken
  const token = header(request, 'x-access-token')
  const operation = signedOperation(request.method, url)
  if (token !== undefined && safeEqual(token, accessToken)) return undefined
  if (operation === undefined) {
    if (request.method === 'GET' && url.pathname === '/health') return undefined
    return 'unauthorized access, please provide a valid access token or method signing if supported'
  }
  if (token !== undefined) return 'access token present in header but does not match'
  if (url.searchParams.get('signature') === null) return 'missing signature query parameter'
  if (!signatureMatches(url, operation, accessToken)) return 'invalid signature'
  const expiration = expirationOf(url)
  if (expiration !== undefined && expiration < Math.floor(Date.now() / 1000))
    return 'signature is already expired'
  return undefined
}

/**
 * The sandbox a signed `/files` URL that names none was made for (its signature matches that sandbox's
 * token), or undefined when the request is not one.
 */
export function signedFileSandbox(
  request: IncomingMessage,
  url: URL,
  registry: SandboxRegistry,
): Sandbox | undefined {
  const operation = signedOperation(request.method, url)
  if (operation === undefined || url.searchParams.get('signature') === null) return undefined
  for (const sandbox of registry.values()) {
    if (signatureMatches(url, operation, sandbox.record.envdAccessToken)) return sandbox
  }
  return undefined
}
