// Helpers for the user-port tests: servers to run inside a sandbox, HTTP and WebSocket clients that reach
// `sandbox.getHost(port)` (Node's resolver knows no `*.localhost`, browsers and curl do: the clients resolve
// it to loopback themselves, as RFC 6761 has it), and a wait for a port to listen inside the sandbox.
import { createHash, randomBytes } from 'node:crypto'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { createServer, type LookupFunction, type Socket } from 'node:net'
import type { Sandbox } from 'e2b'
import { expect } from 'vitest'

/** A Python HTTP server: GET answers the path and the headers it got as JSON, POST echoes the body. */
export const ECHO_SERVER = `
import http.server, json, sys
class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({'path': self.path, 'headers': {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(200)
        self.send_header('content-type', 'application/json')
        self.send_header('x-from-sandbox', 'yes')
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        data = self.rfile.read(int(self.headers.get('content-length', 0)))
        self.send_response(201)
        self.send_header('content-length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args): pass
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Echo).serve_forever()
`

/** A Python WebSocket server (RFC 6455, stdlib only): greets first, then echoes each text frame. */
export const WEBSOCKET_SERVER = `
import base64, hashlib, socket, sys, threading
def frame(payload, opcode=1):
    n = len(payload)
    return bytes([0x80 | opcode]) + (bytes([n]) if n < 126 else bytes([126]) + n.to_bytes(2, 'big')) + payload
def serve(conn):
    f = conn.makefile('rb')
    key = b''
    while True:
        line = f.readline().strip()
        if not line:
            break
        name, _, value = line.partition(b':')
        if name.strip().lower() == b'sec-websocket-key':
            key = value.strip()
    accept = base64.b64encode(hashlib.sha1(key + b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest())
    conn.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + b'\\r\\n\\r\\n')
    conn.sendall(frame(b'hello from the sandbox'))
    while True:
        head = f.read(2)
        if len(head) < 2:
            break
        opcode, n = head[0] & 15, head[1] & 127
        if n == 126:
            n = int.from_bytes(f.read(2), 'big')
        mask = f.read(4) if head[1] & 128 else b'\\0\\0\\0\\0'
        data = bytes(c ^ mask[i % 4] for i, c in enumerate(f.read(n)))
        if opcode == 8:
            conn.sendall(frame(b'', 8))
            break
        conn.sendall(frame(b'echo: ' + data))
    conn.close()
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(('127.0.0.1', int(sys.argv[1])))
server.listen()
while True:
    client, _ = server.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
`

/** Starts `script` (Python) inside the sandbox on `port` and waits until the port accepts connections. */
export async function startServer(sandbox: Sandbox, script: string, port: number): Promise<void> {
  // In the home, named relative to it: commands of an unisolated sandbox see the host's /tmp.
  const file = `server-${port}.py`
  await sandbox.files.write(`/home/user/${file}`, script)
  await sandbox.commands.run(`python3 ${file} ${port} >${file}.log 2>&1`, { background: true, timeoutMs: 0 })
  await sandbox.commands.run(
    `for i in $(seq 1 100); do (echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && exit 0; sleep 0.1; done; cat ${file}.log; exit 1`,
  )
}

/**
 * For a sandbox whose ports are on the host's own loopback: a port another program holds there (a fresh
 * listener, and this host's API on `hostApiPort`) answers 502 and none of its bytes; a server the sandbox
 * itself starts answers.
 */
export async function expectOnlyOwnListeners(sandbox: Sandbox, hostApiPort: number): Promise<void> {
  const hostService = createServer((socket) => socket.end('HTTP/1.0 200 OK\r\n\r\nHOST SECRET'))
  await new Promise<void>((resolve) => hostService.listen(0, '127.0.0.1', resolve))
  try {
    const hostPort = (hostService.address() as { port: number }).port
    const refused = await fetchVia(`http://${sandbox.getHost(hostPort)}/`)
    expect(refused.status).toBe(502)
    expect(refused.body).not.toContain('HOST SECRET')
    expect((await fetchVia(`http://${sandbox.getHost(hostApiPort)}/v2/sandboxes`)).status).toBe(502)
    const own = 20_000 + Math.floor(Math.random() * 20_000)
    await startServer(sandbox, ECHO_SERVER, own)
    const answer = await fetchVia(`http://${sandbox.getHost(own)}/mine`)
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body).path).toBe('/mine')
  } finally {
    hostService.close()
  }
}

/** Resolves every name to 127.0.0.1 (what `*.localhost` means; the tests only ever name the test host). */
export const loopbackLookup: LookupFunction = (_hostname, options, callback) => {
  if (options.all)
    (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [
      { address: '127.0.0.1', family: 4 },
    ])
  else callback(null, '127.0.0.1', 4)
}

export interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
}

/** One HTTP request to `url` (an `http://<port>-<id>.<domain>` URL or the host's own), read whole. */
export function fetchVia(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; ca?: Buffer } = {},
): Promise<Answer> {
  const send = url.startsWith('https:') ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const outgoing = send(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers,
        lookup: loopbackLookup,
        ...(options.ca ? { ca: options.ca } : {}),
      },
      (response) => {
        let body = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => {
          body += chunk
        })
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
        )
        response.on('error', reject)
      },
    )
    outgoing.on('error', reject)
    outgoing.setTimeout(30_000, () => outgoing.destroy(new Error('request timed out')))
    outgoing.end(options.body)
  })
}

/** A WebSocket opened by hand (RFC 6455 client framing): the tests see every byte that crosses the host. */
export interface WebSocketClient {
  /** The next text message from the server. */
  next(): Promise<string>
  send(text: string): void
  /** Resolves when the connection closes. */
  closed: Promise<void>
  close(): void
}

export function openWebSocket(
  url: string,
  headers: Record<string, string> = {},
  ca?: Buffer,
): Promise<WebSocketClient> {
  const key = randomBytes(16).toString('base64')
  const send = url.startsWith('https:') ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const outgoing = send(url, {
      ...(ca ? { ca } : {}),
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-key': key,
        'sec-websocket-version': '13',
        ...headers,
      },
      lookup: loopbackLookup,
    })
    outgoing.on('error', reject)
    outgoing.on('response', (response) => {
      response.resume()
      reject(new Error(`no upgrade: ${response.statusCode}`))
    })
    outgoing.on('upgrade', (response, socket: Socket, head: Buffer) => {
      const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64')
      if (response.headers['sec-websocket-accept'] !== accept) {
        socket.destroy()
        reject(new Error('wrong Sec-WebSocket-Accept'))
        return
      }
      resolve(clientOn(socket, head))
    })
    outgoing.end()
  })
}

function clientOn(socket: Socket, head: Buffer): WebSocketClient {
  let buffer = head
  const messages: string[] = []
  const waiting: Array<(text: string) => void> = []
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  // Frames may already have come with the 101 (in `head`): parse those at once, then each chunk.
  const drain = () => {
    while (buffer.length >= 2) {
      let length = (buffer[1] ?? 0) & 127
      let offset = 2
      if (length === 126) {
        if (buffer.length < 4) return
        length = buffer.readUInt16BE(2)
        offset = 4
      }
      if (buffer.length < offset + length) return
      const opcode = (buffer[0] ?? 0) & 15
      const text = buffer.subarray(offset, offset + length).toString()
      buffer = buffer.subarray(offset + length)
      if (opcode !== 1) continue
      const waiter = waiting.shift()
      if (waiter) waiter(text)
      else messages.push(text)
    }
  }
  drain()
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk])
    drain()
  })
  socket.on('error', () => socket.destroy())
  const frame = (opcode: number, payload: Buffer) => {
    const mask = randomBytes(4)
    const masked = Buffer.from(payload.map((byte, index) => byte ^ (mask[index % 4] ?? 0)))
    socket.write(Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | payload.length]), mask, masked]))
  }
  return {
    next: () =>
      new Promise<string>((resolve, reject) => {
        const queued = messages.shift()
        if (queued !== undefined) return resolve(queued)
        const timer = setTimeout(() => reject(new Error('no message within 10 s')), 10_000)
        waiting.push((text) => {
          clearTimeout(timer)
          resolve(text)
        })
      }),
    send: (text) => frame(1, Buffer.from(text)),
    closed,
    close: () => {
      frame(8, Buffer.alloc(0))
      socket.end()
    },
  }
}
