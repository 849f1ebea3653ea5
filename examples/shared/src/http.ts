// What the examples' HTTP servers share, imported as '@sandkeep-examples/shared/http': reading a bounded
// JSON body, and listening on loopback with a close that also drops kept-alive connections.
import type { IncomingMessage, Server } from 'node:http'

/** The request's body parsed as JSON. @throws Error past `maxBytes`, or for text that is not JSON */
export async function readJsonBody(request: IncomingMessage, maxBytes: number): Promise<unknown> {
  let size = 0
  const chunks: Buffer[] = []
  for await (const chunk of request) {
    size += (chunk as Buffer).length
    if (size > maxBytes) throw new Error('body too large')
    chunks.push(chunk as Buffer)
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'))
}

/** Listens on 127.0.0.1:`port` (0: any free port); returns the base URL and a close. */
export async function listenOnLoopback(
  server: Server,
  port: number,
): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const address = server.address()
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}`,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
