// An HTTP proxy in front of a local-e2b host that logs every request (when it began, when its response
// ended) and holds each one back `delayMs` as a network would, so that tests can tell requests made one
// after the other (each waiting for the previous answer) from requests made side by side. The E2B SDK sends
// the control plane and every sandbox call to the one URL it is given (`apiUrl`, `sandboxUrl`), so all of
// them pass here.
import { Agent, createServer, request as httpRequest, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request through the proxy. */
export interface LoggedRequest {
  method: string
  path: string
  /** The `E2b-Sandbox-Id` header: set on envd and interpreter calls, absent on control-plane calls. */
  sandboxId: string | undefined
  /** `performance.now()` when the request arrived. */
  startedAt: number
  /** `performance.now()` when its response ended; Infinity while it runs. */
  endedAt: number
}

export interface RequestLog {
  /** Point the SDK's `apiUrl` and `sandboxUrl` here. */
  url: string
  /** Every request so far, in arrival order. */
  readonly requests: readonly LoggedRequest[]
  close(): Promise<void>
}

/** Starts the proxy on a free loopback port, forwarding to `target` (e.g. `host.apiUrl`). */
export async function startRequestLog(
  target: string,
  options: { delayMs?: number } = {},
): Promise<RequestLog> {
  const upstream = new URL(target)
  const agent = new Agent({ keepAlive: true })
  const requests: LoggedRequest[] = []
  const server = createServer((incoming, outgoing) => {
    const entry: LoggedRequest = {
      method: incoming.method ?? 'GET',
      path: incoming.url ?? '/',
      sandboxId: header(incoming, 'e2b-sandbox-id'),
      startedAt: performance.now(),
      endedAt: Number.POSITIVE_INFINITY,
    }
    requests.push(entry)
    outgoing.once('close', () => {
      entry.endedAt = performance.now()
    })
    setTimeout(() => {
      const forwarded = httpRequest(
        {
          agent,
          host: upstream.hostname,
          port: upstream.port,
          method: incoming.method,
          path: incoming.url,
          headers: incoming.headers,
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(outgoing)
        },
      )
      forwarded.on('error', () => outgoing.destroy())
      incoming.pipe(forwarded)
    }, options.delayMs ?? 0)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        agent.destroy()
        server.close(() => resolve())
      }),
  }
}

function header(message: IncomingMessage, name: string): string | undefined {
  const value = message.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/**
 * The number of round trips `requests` cost one after the other: the longest chain of requests each of which
 * began after the one before it in the chain had ended. Requests made side by side count once.
 */
export function sequentialRoundTrips(requests: readonly LoggedRequest[]): number {
  const ordered = [...requests].sort((a, b) => a.startedAt - b.startedAt)
  const depth: number[] = []
  for (const [index, request] of ordered.entries()) {
    let before = 0
    for (let earlier = 0; earlier < index; earlier++) {
      if (ordered[earlier]!.endedAt <= request.startedAt) before = Math.max(before, depth[earlier]!)
    }
    depth.push(before + 1)
  }
  return Math.max(0, ...depth)
}
