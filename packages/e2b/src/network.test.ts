// The network update's request as E2B cloud gets it, on a loopback stand-in for its API (local-e2b has no
// network update: that answer is tested against it in test/ports-network.test.ts).
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createE2BProvider } from './provider.js'

interface Seen {
  method: string
  url: string
  body: unknown
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString()
  return text ? JSON.parse(text) : undefined
}

describe('updateNetwork on an API that has the endpoint', () => {
  const seen: Seen[] = []
  let server: Server
  let apiUrl: string
  beforeAll(async () => {
    server = createServer(async (request, response) => {
      seen.push({ method: request.method ?? '', url: request.url ?? '', body: await readBody(request) })
      if (/^\/sandboxes\/gone(\/|$|\?)/.test(request.url ?? '')) {
        response.writeHead(404, { 'content-type': 'application/json' })
        response.end(JSON.stringify({ code: 404, message: 'not found' }))
        return
      }
      response.writeHead(204)
      response.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
  })

  it("sends E2B's body: allow and deny lists, internet access", async () => {
    const provider = createE2BProvider({ apiKey: 'e2b_test', apiUrl })
    await provider.updateNetwork?.('sbx1', { allowOut: ['pypi.org', '10.0.0.0/8'], denyOut: ['0.0.0.0/0'] })
    await provider.updateNetwork?.('sbx1', { allowInternetAccess: false })
    expect(seen.slice(-2)).toEqual([
      {
        method: 'PUT',
        url: '/sandboxes/sbx1/network',
        body: { allowOut: ['pypi.org', '10.0.0.0/8'], denyOut: ['0.0.0.0/0'] },
      },
      { method: 'PUT', url: '/sandboxes/sbx1/network', body: { allow_internet_access: false } },
    ])
  })

  it('a sandbox the API does not know is SANDBOX_NOT_FOUND; a bad policy fails before any request', async () => {
    const provider = createE2BProvider({ apiKey: 'e2b_test', apiUrl })
    await expect(provider.updateNetwork?.('gone', { allowInternetAccess: true })).rejects.toMatchObject({
      code: 'SANDBOX_NOT_FOUND',
    })
    const before = seen.length
    for (const policy of [{ allowOut: 'pypi.org' }, { allowOut: [''] }, { rules: {} }, null]) {
      await expect(provider.updateNetwork?.('sbx1', policy as never)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      })
    }
    expect(seen.length).toBe(before)
  })
})
