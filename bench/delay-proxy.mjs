// A TCP proxy that puts a network distance between the bench's client and a loopback host: every byte is
// forwarded RTT/2 after it arrived, in each direction, in order, and a slow reader slows its writer
// (backpressure) instead of the proxy buffering without bound. Used by the latency bench, where the E2B SDK's
// control-plane calls and its sandbox traffic (E2B_SANDBOX_URL points every envd and interpreter call at one
// URL) both go through it.
//
// What it models: propagation delay and the TCP handshake (the first byte of a new connection leaves the
// client one round trip after it connected, as after SYN / SYN-ACK). What it does not: TLS (E2B is https,
// one more round trip per new connection with TLS 1.3), bandwidth limits, loss, jitter.
import { connect, createServer } from 'node:net'

/** Bytes queued in one direction above which the sending socket is paused until the queue drains. */
const QUEUE_HIGH_WATER = 256 * 1024
const END = Symbol('end')

/**
 * Starts the proxy on a free loopback port, forwarding to `target`.
 * @param {{ target: { host?: string, port: number }, rttMs?: number, handshakeRtts?: number }} options
 * @returns {Promise<{ port: number, url: string, rttMs: number, setRtt: (ms: number) => void,
 *   connections: () => number, close: () => Promise<void> }>}
 */
export async function startDelayProxy({ target, rttMs = 0, handshakeRtts = 1 }) {
  let oneWayMs = rttMs / 2
  let currentRtt = rttMs
  let accepted = 0
  const open = new Set()
  // HTTP request lines seen going to the target, with the time they arrived here (the client sent them).
  const requests = []
  const REQUEST_LINE = /(?:^|\r\n)(GET|POST|PUT|PATCH|DELETE|HEAD) (\/\S*) HTTP\/1\.[01]\r\n/g
  const server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    accepted++
    const upstream = connect({ host: target.host ?? '127.0.0.1', port: target.port, allowHalfOpen: true })
    upstream.setNoDelay(true)
    open.add(client)
    open.add(upstream)
    // The client believes it is connected now; on a real network its first byte leaves after the handshake.
    client.on('data', (chunk) => {
      const at = performance.now()
      for (const match of chunk.toString('latin1').matchAll(REQUEST_LINE))
        requests.push({ at, method: match[1], path: match[2] })
    })
    const firstByteAt = performance.now() + handshakeRtts * currentRtt
    forward(client, upstream, () => oneWayMs, firstByteAt)
    forward(upstream, client, () => oneWayMs, 0)
    const closeBoth = () => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
      open.delete(upstream)
    }
    client.once('close', closeBoth)
    upstream.once('close', closeBoth)
    client.on('error', closeBoth)
    upstream.on('error', closeBoth)
  })
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const { port } = server.address()
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    get rttMs() {
      return currentRtt
    },
    /** Changes the round-trip time for bytes that arrive from now on (bytes in flight keep their slot). */
    setRtt(ms) {
      currentRtt = ms
      oneWayMs = ms / 2
    },
    /** Connections accepted so far (each costs the client a handshake). */
    connections: () => accepted,
    /**
     * HTTP requests sent through the proxy so far (request lines found at the start of a chunk or after a
     * CRLF; a body that holds one would count too), oldest first: `{ at, method, path }`.
     */
    requests: () => requests,
    close: () =>
      new Promise((resolve) => {
        for (const socket of open) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

/**
 * Forwards `source` to `destination`, each chunk `delay()` ms after it arrived or after `notBefore`, whichever
 * is later, keeping the order; `end` travels the same way. The source is paused while the queue holds
 * more than QUEUE_HIGH_WATER bytes or the destination refuses more (its write returned false).
 */
function forward(source, destination, delay, notBefore) {
  const queue = []
  let queuedBytes = 0
  let lastDue = 0
  let timer
  let blocked = false

  const drain = () => {
    timer = undefined
    while (queue.length > 0 && !blocked && !destination.destroyed) {
      const head = queue[0]
      const wait = head.due - performance.now()
      if (wait > 0) {
        timer = setTimeout(drain, wait)
        break
      }
      queue.shift()
      if (head.chunk === END) {
        destination.end()
        break
      }
      queuedBytes -= head.chunk.length
      if (!destination.write(head.chunk)) {
        blocked = true
        destination.once('drain', () => {
          blocked = false
          drain()
        })
      }
    }
    if (!blocked && queuedBytes < QUEUE_HIGH_WATER && source.isPaused()) source.resume()
  }
  const enqueue = (chunk) => {
    // A later chunk never overtakes an earlier one, even if the delay was lowered in between.
    lastDue = Math.max(lastDue, Math.max(performance.now(), notBefore) + delay())
    queue.push({ chunk, due: lastDue })
    if (chunk !== END) {
      queuedBytes += chunk.length
      if (queuedBytes >= QUEUE_HIGH_WATER) source.pause()
    }
    if (timer === undefined && !blocked) drain()
  }
  source.on('data', enqueue)
  source.once('end', () => enqueue(END))
}
