// What E2B's edge proxy decides before a request reaches a sandbox, done the same way here: which sandbox and
// port a request is for (the `<port>-<sandboxId>.<domain>` host name, or the E2b-Sandbox-Id/-Port headers the
// SDK sends when `sandboxUrl` is set), the answers it gives when it cannot deliver (sandbox not found, port
// closed, traffic token missing or wrong, resume refused: JSON for programs, an HTML page for a browser), and
// the auto-resume of a paused sandbox that a request wakes. Facts from e2b-dev/infra's client-proxy and
// orchestrator proxy (packages/shared/pkg/proxy): the statuses, the JSON fields and their messages.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { header } from './http.js'
import type { Lifecycle } from './lifecycle.js'
import type { Sandbox } from './sandbox.js'

/** envd's port: the SDK's own traffic (processes, files), checked by envd's access token. */
export const ENVD_PORT = 49983
/** The code interpreter's port. */
export const INTERPRETER_PORT = 49999
/** The header a sandbox with private ingress (`network.allowPublicTraffic: false`) wants on its user ports. */
export const TRAFFIC_TOKEN_HEADER = 'e2b-traffic-access-token'

/** The sandbox and port a request is addressed to. */
export interface SandboxTarget {
  sandboxId: string
  port: number
}

/** A request that names a sandbox but cannot be routed: answered 400 with E2B's plain-text reason. */
export class RoutingError extends Error {}

function parsePort(text: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65_535)
    throw new RoutingError('Invalid sandbox port')
  return Number(text)
}

const SANDBOX_ID = /^[A-Za-z0-9_-]{1,128}$/

/** `<port>-<sandboxId>` as the first label of a host name (E2B's ids have no dash; a suffix after one is dropped). */
const HOST_LABEL = /^(\d+)-([A-Za-z0-9_]+)[^.]*\./

/**
 * The target of a request, or undefined when it is not sandbox traffic (the control plane, /_local, /health).
 * Like E2B's proxy, a host name of the form `<port>-<id>.<anything>` addresses that port of that sandbox; the
 * routing headers are read otherwise (E2B reads them only on `localhost`, an IP or `sandbox.<domain>`; this
 * host reads them on any name, so that a host reached under another name still serves the SDK). Throws
 * RoutingError for a malformed address.
 */
export function sandboxTarget(request: IncomingMessage): SandboxTarget | undefined {
  const host = header(request, 'host') ?? ''
  const label = HOST_LABEL.exec(host)
  if (label) {
    const sandboxId = (label[2] as string).slice(0, 128)
    return { sandboxId, port: parsePort(label[1] as string) }
  }
  const sandboxId = header(request, 'e2b-sandbox-id')
  const port = header(request, 'e2b-sandbox-port')
  if (sandboxId === undefined && port === undefined) return undefined
  if (!sandboxId || !port) throw new RoutingError('missing header')
  if (!SANDBOX_ID.test(sandboxId)) throw new RoutingError('Invalid sandbox ID')
  return { sandboxId, port: parsePort(port) }
}

/** One of the edge's refusals: status, JSON body, and the title and sentence of its browser page. */
export interface EdgeAnswer {
  status: number
  body: Record<string, unknown>
  title: string
  sentence: string
  /** Headers sent with it (e.g. Retry-After). */
  headers?: Record<string, string>
}

/** An answer as sent: status, content type, body and headers. */
export interface RenderedAnswer {
  status: number
  contentType: string
  body: string
  headers: Record<string, string>
}

/** A sandbox id as echoed in an answer (bounded: it comes from the request). */
const shownId = (sandboxId: string) => sandboxId.slice(0, 64)

/** The sandbox is gone, never existed, or is paused without auto-resume: 502, as E2B's edge answers. */
export function sandboxNotFound(sandboxId: string): EdgeAnswer {
  return {
    status: 502,
    body: { sandboxId: shownId(sandboxId), message: 'The sandbox was not found', code: 502 },
    title: 'Sandbox Not Found',
    sentence: `The sandbox ${shownId(sandboxId)} was not found: it was killed, it expired, or it is paused without auto-resume.`,
  }
}

/** The sandbox runs but nothing accepts connections on the port. */
export function portClosed(sandboxId: string, port: number): EdgeAnswer {
  return {
    status: 502,
    body: {
      sandboxId: shownId(sandboxId),
      message: 'The sandbox is running but port is not open',
      port,
      code: 502,
    },
    title: 'Closed Port Error',
    sentence: `The sandbox ${shownId(sandboxId)} is running, but no service accepts connections on port ${port}.`,
  }
}

/** A private-ingress sandbox, and the request's traffic token is missing or wrong. */
export function trafficTokenRefused(sandboxId: string, missing: boolean): EdgeAnswer {
  const message = missing
    ? `Sandbox is secured with traffic access token. Token header '${TRAFFIC_TOKEN_HEADER}' is missing`
    : `Sandbox is secured with traffic access token. Provided token in header '${TRAFFIC_TOKEN_HEADER}' is invalid`
  return {
    status: 403,
    body: { sandboxId: shownId(sandboxId), message, code: 403 },
    title: 'Traffic Access Token Error',
    sentence: message,
  }
}

/** A paused private-ingress sandbox that the request may not wake. */
export function resumeRefused(sandboxId: string): EdgeAnswer {
  const message =
    "This sandbox can't be resumed with the credentials provided. Check your access token and try again."
  return {
    status: 403,
    body: { sandboxId: shownId(sandboxId), message, code: 403 },
    title: 'Sandbox Resume Error',
    sentence: message,
  }
}

const BROWSER = /mozilla|chrome|safari|firefox|edge|opera|msie/i

/**
 * True when the answer should be the HTML page: a browser navigating to the URL. A script's request (it asks
 * for JSON, or the browser marks it as a fetch) gets JSON even from a browser, as E2B decides it.
 */
function wantsHtml(request: IncomingMessage): boolean {
  const accept = (header(request, 'accept') ?? '').toLowerCase()
  if (accept.includes('application/json') && !accept.includes('text/html')) return false
  const mode = (header(request, 'sec-fetch-mode') ?? '').toLowerCase()
  if (mode === 'cors' || mode === 'no-cors' || mode === 'same-origin' || mode === 'websocket') return false
  if (mode !== 'navigate' && header(request, 'x-requested-with')) return false
  return BROWSER.test(header(request, 'user-agent') ?? '')
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)
}

/** The status line, headers and body of an answer, for the request that gets it. */
export function renderAnswer(request: IncomingMessage, answer: EdgeAnswer): RenderedAnswer {
  const headers = answer.headers ?? {}
  if (wantsHtml(request)) {
    const body =
      `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(answer.title)}</title></head>` +
      `<body><h1>${escapeHtml(answer.title)}</h1><p>${escapeHtml(answer.sentence)}</p>` +
      `<p><code>${escapeHtml(header(request, 'host') ?? '')}</code></p></body></html>\n`
    return { status: answer.status, contentType: 'text/html; charset=utf-8', body, headers }
  }
  return {
    status: answer.status,
    contentType: 'application/json; charset=utf-8',
    body: JSON.stringify(answer.body),
    headers,
  }
}

/** Sends an answer on an HTTP response. */
export function sendAnswer(request: IncomingMessage, response: ServerResponse, answer: EdgeAnswer): void {
  const { status, contentType, body, headers } = renderAnswer(request, answer)
  if (response.headersSent) {
    response.destroy()
    return
  }
  response.writeHead(status, {
    ...headers,
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
  })
  response.end(body)
}

/**
 * Resumes a paused sandbox that auto-resumes, as E2B's edge does for a request that reaches it; false when the
 * sandbox is paused and does not auto-resume (the request then gets {@link sandboxNotFound}).
 */
export async function resumeForTraffic(
  sandbox: Sandbox,
  lifecycle: Lifecycle,
  timeoutMs: number,
): Promise<boolean> {
  if (sandbox.record.state !== 'paused') return true
  if (!sandbox.record.autoResume) return false
  await sandbox.serialize(async () => {
    if (sandbox.record.state === 'paused') await lifecycle.resume(sandbox, true, timeoutMs, 'auto-resume')
  })
  return true
}
