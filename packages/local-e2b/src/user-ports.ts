// Traffic to a server the sandbox's own code runs, on any port but envd's and the interpreter's: what
// `sandbox.getHost(port)` names. As E2B's edge does it: a sandbox that is gone (or paused without
// auto-resume) answers 502 "not found"; a paused auto-resume sandbox is resumed by the request; a sandbox
// created with `network.allowPublicTraffic: false` wants its traffic token in `e2b-traffic-access-token`
// (403 otherwise), every other sandbox's ports are public, as on E2B; nothing listening answers 502 "port is
// not open" after E2B's retries. HTTP requests are forwarded one upstream connection each, Host kept (or
// `maskRequestHost`); an Upgrade request (WebSocket) is relayed as bytes both ways once its head is passed on.
import { request as httpRequest, type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import {
  type EdgeAnswer,
  portClosed,
  type RenderedAnswer,
  renderAnswer,
  resumeForTraffic,
  resumeRefused,
  type SandboxTarget,
  sandboxNotFound,
  sendAnswer,
  TRAFFIC_TOKEN_HEADER,
  trafficTokenRefused,
} from './edge.js'
import type { HostEventLog } from './events.js'
import { HttpError, header, safeEqual } from './http.js'
import type { Lifecycle } from './lifecycle.js'
import { PortNotOpenError, type PortRelays } from './port-relay.js'
import type { SandboxRegistry } from './registry.js'
import type { Sandbox, SandboxRecord } from './sandbox.js'

/** E2B's orchestrator proxy tries a refused port 5 times, 100 ms more apart each time (a server starting up). */
const CONNECT_ATTEMPTS = 5
const CONNECT_BACKOFF_MS = 100

/** What E2B's `maskRequestHost` replaces with the port. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: E2B's placeholder is this literal text
const PORT_PLACEHOLDER = '${PORT}'

/** Request and response headers that belong to one hop, not to the server behind it. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'transfer-encoding',
  'upgrade',
])

/**
 * How long a relayed upgrade stays open once one side has ended its half: long enough to flush what is in
 * flight, short enough that a client's close never leaves a socket behind (E2B's proxy, Go's ReverseProxy,
 * closes both sides as soon as either copy direction ends).
 */
const HALF_CLOSED_GRACE_MS = 1_000

export interface UserPortsOptions {
  registry: SandboxRegistry
  lifecycle: Lifecycle
  events: HostEventLog
  relays: PortRelays
  /** Timeout (ms) a sandbox resumed by a request then runs. */
  defaultTimeoutMs: number
  /** Most connections open at once to one sandbox's ports; one more gets 429. */
  maxConnectionsPerSandbox: number
  /** Most connections open at once across the host; one more gets 503. */
  maxConnections: number
}

/** How many user-port connections are open (requests in flight and relayed upgrades), in all and by sandbox. */
export interface OpenConnections {
  total: number
  bySandbox: Record<string, number>
}

export class UserPorts {
  readonly #options: UserPortsOptions
  /** Open upstream connections by sandbox: cut when the sandbox pauses or ends, as its VM's would be. */
  readonly #open = new Map<string, Set<Duplex>>()
  /** Connections admitted and not yet ended, by sandbox (each holds one slot from admit to release). */
  readonly #slots = new Map<string, number>()
  #slotsInUse = 0
  /** Clients of relayed upgrades: the HTTP server forgets a socket once it is upgraded, so close() ends them. */
  readonly #upgraded = new Set<Duplex>()
  #closed = false

  constructor(options: UserPortsOptions) {
    this.#options = options
    const cut = (event: { sandboxId?: string }) => {
      if (event.sandboxId) this.#cut(event.sandboxId)
    }
    options.events.on('sandbox-pause', cut)
    options.events.on('sandbox-kill', cut)
  }

  /** Ends every relayed connection and refuses new ones (the host is closing). */
  close(): void {
    this.#closed = true
    for (const client of this.#upgraded) client.destroy()
    for (const open of this.#open.values()) for (const upstream of open) upstream.destroy()
  }

  /** The connections open now (for tests and the admin's view). */
  openConnections(): OpenConnections {
    return { total: this.#slotsInUse, bySandbox: Object.fromEntries(this.#slots) }
  }

  /**
   * Takes a connection slot for the sandbox, or the refusal to answer: 503 past the host's bound, 429 past the
   * sandbox's. The returned release is idempotent.
   */
  #admit(sandboxId: string): { release: () => void } | { answer: EdgeAnswer } {
    const { maxConnections, maxConnectionsPerSandbox, events } = this.#options
    const held = this.#slots.get(sandboxId) ?? 0
    const answer =
      this.#slotsInUse >= maxConnections
        ? hostBusy(sandboxId, maxConnections)
        : held >= maxConnectionsPerSandbox
          ? sandboxBusy(sandboxId, maxConnectionsPerSandbox)
          : undefined
    if (answer) {
      events.record('edge-refuse', sandboxId, {
        status: answer.status,
        reason: answer.status === 503 ? 'maxConnections' : 'maxConnectionsPerSandbox',
      })
      return { answer }
    }
    this.#slots.set(sandboxId, held + 1)
    this.#slotsInUse++
    let released = false
    return {
      release: () => {
        if (released) return
        released = true
        this.#slotsInUse--
        const left = (this.#slots.get(sandboxId) ?? 1) - 1
        if (left <= 0) this.#slots.delete(sandboxId)
        else this.#slots.set(sandboxId, left)
      },
    }
  }

  /** Serves one HTTP request for a user port. */
  async handleRequest(request: IncomingMessage, response: ServerResponse, target: SandboxTarget) {
    const slot = this.#admit(target.sandboxId)
    if ('answer' in slot) {
      request.resume()
      sendAnswer(request, response, slot.answer)
      return
    }
    response.once('close', slot.release)
    const opened = await this.#reach(request, target).catch((error: unknown) => {
      slot.release()
      throw error
    })
    if ('answer' in opened) {
      request.resume()
      sendAnswer(request, response, opened.answer)
      return
    }
    if (response.destroyed) {
      // The client went away while the port was being reached.
      opened.upstream.destroy()
      return
    }
    const { sandbox, upstream } = opened
    const outgoing = httpRequest({
      // Handed over paused (nothing may be lost before a reader attaches); the client reads it from here on.
      createConnection: () => upstream.resume() as never,
      method: request.method,
      path: request.url,
      headers: forwardedHeaders(request, sandbox, target.port),
      setHost: false,
    })
    outgoing.on('response', (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.rawHeaders))
      answer.pipe(response)
      answer.on('error', () => response.destroy())
    })
    outgoing.on('error', () => {
      if (response.headersSent) response.destroy()
      else sendAnswer(request, response, portClosed(target.sandboxId, target.port))
    })
    response.on('close', () => {
      if (!response.writableFinished) outgoing.destroy()
    })
    request.pipe(outgoing)
  }

  /**
   * Serves an Upgrade request (WebSocket): its head goes to the server, then bytes flow both ways. Either
   * side's close, error or end of its half closes both (after {@link HALF_CLOSED_GRACE_MS} to flush), also
   * when the client leaves while the port is still being reached.
   */
  async handleUpgrade(request: IncomingMessage, client: Duplex, head: Buffer, target: SandboxTarget) {
    client.on('error', () => client.destroy())
    if (this.#closed) {
      client.destroy()
      return
    }
    const slot = this.#admit(target.sandboxId)
    if ('answer' in slot) {
      writeRawAnswer(client, renderAnswer(request, slot.answer))
      return
    }
    this.#upgraded.add(client)
    client.once('close', () => {
      slot.release()
      this.#upgraded.delete(client)
    })
    // Until the upstream exists, a client that ends its half is simply gone.
    const leftEarly = () => client.destroy()
    client.once('end', leftEarly)
    const opened = await this.#reach(request, target).catch((error: unknown) => {
      slot.release()
      throw error
    })
    client.off('end', leftEarly)
    if ('answer' in opened) {
      writeRawAnswer(client, renderAnswer(request, opened.answer))
      return
    }
    const { upstream, sandbox } = opened
    if (client.destroyed) {
      upstream.destroy()
      return
    }
    const lines = [`${request.method} ${request.url} HTTP/1.1`]
    const headers = forwardedHeaders(request, sandbox, target.port, true)
    for (let index = 0; index < headers.length; index += 2)
      lines.push(`${headers[index]}: ${headers[index + 1]}`)
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`)
    if (head.length > 0) upstream.write(head)
    relayBothWays(client, upstream)
  }

  /** The checks E2B's edge makes, then a connection to the port; or the answer to give instead. */
  async #reach(
    request: IncomingMessage,
    target: SandboxTarget,
  ): Promise<{ sandbox: Sandbox; upstream: Duplex } | { answer: EdgeAnswer }> {
    const { registry, lifecycle, relays, defaultTimeoutMs } = this.#options
    const sandbox = registry.get(target.sandboxId)
    if (!sandbox) return { answer: sandboxNotFound(target.sandboxId) }
    const token = header(request, TRAFFIC_TOKEN_HEADER)
    const tokenOk = token !== undefined && safeEqual(token, sandbox.trafficAccessToken)
    const isPrivate = sandbox.record.ingress?.allowPublicTraffic === false
    if (sandbox.record.state === 'paused') {
      // A private sandbox is woken only by a request that carries its traffic token.
      if (isPrivate && sandbox.record.autoResume && !tokenOk) return { answer: resumeRefused(sandbox.id) }
      if (!(await resumeForTraffic(sandbox, lifecycle, defaultTimeoutMs)))
        return { answer: sandboxNotFound(sandbox.id) }
    }
    if (isPrivate && !tokenOk) return { answer: trafficTokenRefused(sandbox.id, token === undefined) }
    await sandbox.runtime.boot()
    for (let attempt = 1; ; attempt++) {
      try {
        const upstream = await relays.connect(sandbox, target.port)
        this.#track(sandbox.id, upstream)
        return { sandbox, upstream }
      } catch (error) {
        if (!(error instanceof PortNotOpenError) || attempt >= CONNECT_ATTEMPTS)
          return { answer: portClosed(sandbox.id, target.port) }
        await new Promise((resolve) => setTimeout(resolve, CONNECT_BACKOFF_MS * attempt))
        if (!registry.holds(sandbox) || sandbox.record.state !== 'running')
          return { answer: sandboxNotFound(sandbox.id) }
      }
    }
  }

  #track(sandboxId: string, upstream: Duplex): void {
    let open = this.#open.get(sandboxId)
    if (!open) {
      open = new Set()
      this.#open.set(sandboxId, open)
    }
    open.add(upstream)
    upstream.on('close', () => {
      open.delete(upstream)
      if (open.size === 0 && this.#open.get(sandboxId) === open) this.#open.delete(sandboxId)
    })
  }

  #cut(sandboxId: string): void {
    for (const upstream of this.#open.get(sandboxId) ?? []) upstream.destroy()
  }
}

/**
 * Pipes two sockets into each other until either closes, fails or ends its half; then both are closed (the
 * other's half ended at once, both destroyed once that is flushed or after the grace), so that a peer that
 * never notices the other left cannot hold two host sockets open.
 */
function relayBothWays(client: Duplex, upstream: Duplex): void {
  let closing = false
  const destroyBoth = () => {
    client.destroy()
    upstream.destroy()
  }
  const closeBoth = () => {
    if (closing) return
    closing = true
    client.end()
    upstream.end()
    setTimeout(destroyBoth, HALF_CLOSED_GRACE_MS).unref()
  }
  // end: false, the ends are closeBoth's to make.
  upstream.pipe(client, { end: false })
  client.pipe(upstream, { end: false })
  for (const side of [client, upstream]) {
    side.on('end', closeBoth)
    side.on('error', destroyBoth)
    side.on('close', destroyBoth)
    side.on('finish', () => {
      if (closing && client.writableFinished && upstream.writableFinished) destroyBoth()
    })
  }
}

/** The host holds as many user-port connections as it may: 503, try again shortly. */
function hostBusy(sandboxId: string, limit: number): EdgeAnswer {
  const message = `This host has ${limit} connections to sandbox ports open, its limit (maxConnections); retry shortly`
  return {
    status: 503,
    body: { sandboxId: sandboxId.slice(0, 64), message, code: 503 },
    title: 'Host Busy',
    sentence: message,
    headers: { 'retry-after': '1' },
  }
}

/** The sandbox holds as many connections to its ports as it may: 429. */
function sandboxBusy(sandboxId: string, limit: number): EdgeAnswer {
  const message = `The sandbox ${sandboxId.slice(0, 64)} has ${limit} connections to its ports open, its limit (maxConnectionsPerSandbox); close some and retry`
  return {
    status: 429,
    body: { sandboxId: sandboxId.slice(0, 64), message, code: 429 },
    title: 'Too Many Connections',
    sentence: message,
    headers: { 'retry-after': '1' },
  }
}

/**
 * The ingress part of a create request's `network` (`allowPublicTraffic`, `maskRequestHost`); undefined when
 * it sets neither. 400 for a wrong type, or a host that could not be sent as a header.
 */
export function parseIngress(network: unknown): SandboxRecord['ingress'] {
  if (network === undefined || network === null) return undefined
  if (typeof network !== 'object' || Array.isArray(network))
    throw new HttpError(400, 'network must be an object')
  const { allowPublicTraffic, maskRequestHost } = network as Record<string, unknown>
  if (allowPublicTraffic !== undefined && typeof allowPublicTraffic !== 'boolean')
    throw new HttpError(400, 'network.allowPublicTraffic must be a boolean')
  if (
    maskRequestHost !== undefined &&
    (typeof maskRequestHost !== 'string' || !/^[\x21-\x7e]{1,253}$/.test(maskRequestHost))
  )
    throw new HttpError(400, 'network.maskRequestHost must be a host name of printable characters')
  if (allowPublicTraffic === undefined && maskRequestHost === undefined) return undefined
  return {
    allowPublicTraffic: allowPublicTraffic !== false,
    ...(maskRequestHost === undefined ? {} : { maskRequestHost }),
  }
}

/**
 * The request's headers as the server gets them: Host kept (E2B passes the client's host on), or the sandbox's
 * `maskRequestHost` with `${PORT}` filled in and the original in X-Forwarded-Host; hop-by-hop headers dropped
 * except, for an upgrade, Connection and Upgrade themselves.
 */
function forwardedHeaders(
  request: IncomingMessage,
  sandbox: Sandbox,
  port: number,
  upgrade = false,
): string[] {
  const mask = sandbox.record.ingress?.maskRequestHost
  const out: string[] = []
  const raw = request.rawHeaders
  for (let index = 0; index < raw.length; index += 2) {
    const name = raw[index] as string
    const lower = name.toLowerCase()
    if (HOP_BY_HOP.has(lower) && !(upgrade && (lower === 'connection' || lower === 'upgrade'))) continue
    if (lower === 'host' && mask) {
      out.push(
        name,
        mask.replaceAll(PORT_PLACEHOLDER, String(port)),
        'X-Forwarded-Host',
        raw[index + 1] as string,
      )
      continue
    }
    out.push(name, raw[index + 1] as string)
  }
  return out
}

/** Response headers without the hop-by-hop ones (this server frames the body itself). */
function endToEnd(rawHeaders: string[]): string[] {
  const out: string[] = []
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const name = rawHeaders[index] as string
    if (!HOP_BY_HOP.has(name.toLowerCase())) out.push(name, rawHeaders[index + 1] as string)
  }
  return out
}

/** Writes an answer as a whole HTTP/1.1 response on a raw socket (an upgrade that cannot go through). */
function writeRawAnswer(socket: Duplex, rendered: RenderedAnswer): void {
  const reason = STATUS_CODES[rendered.status] ?? 'Error'
  const extra = Object.entries(rendered.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
  socket.end(
    `HTTP/1.1 ${rendered.status} ${reason}\r\ncontent-type: ${rendered.contentType}\r\n${extra}` +
      `content-length: ${Buffer.byteLength(rendered.body)}\r\nconnection: close\r\n\r\n${rendered.body}`,
  )
}
