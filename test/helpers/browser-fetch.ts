// A GET as a person's browser makes it: `*.localhost` goes to loopback (RFC 6761; browsers and curl do it,
// Node's resolver does not), no special headers.
import { request } from 'node:http'
import type { LookupFunction } from 'node:net'

const loopback: LookupFunction = (hostname, options, callback) => {
  if (!hostname.endsWith('.localhost') && hostname !== 'localhost') {
    callback(new Error(`this test only opens *.localhost, not ${hostname}`), '', 4)
    return
  }
  if (options.all) {
    ;(callback as unknown as (error: null, addresses: Array<{ address: string; family: number }>) => void)(
      null,
      [{ address: '127.0.0.1', family: 4 }],
    )
  } else callback(null, '127.0.0.1', 4)
}

/** GETs an `http://` URL; the status and the body (at most 1 MB), within `timeoutMs`. */
export function browserGet(url: string, timeoutMs = 15_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { lookup: loopback, timeout: timeoutMs }, (response) => {
      const chunks: Buffer[] = []
      let size = 0
      response.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size <= 1_000_000) chunks.push(chunk)
      })
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
      )
      response.on('error', reject)
    })
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer from ${url} in ${timeoutMs} ms`)))
    outgoing.on('error', reject)
    outgoing.end()
  })
}
