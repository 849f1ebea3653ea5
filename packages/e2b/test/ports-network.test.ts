// Port endpoints and network updates against a real local-e2b host through the SDK: the endpoint's shape
// there (the conformance suite fetches through it), and what a platform without a network update answers.
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createE2BProvider } from '../src/index.js'

describe('ports and network on local-e2b', () => {
  let host: LocalE2BHost
  const created: string[] = []
  const provider = () =>
    createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl })

  beforeAll(async () => {
    host = await startLocalE2B({ logger: () => {} })
  })
  afterAll(async () => {
    for (const id of created)
      await provider()
        .kill(id)
        .catch(() => false)
    await host.close()
  })

  it('routes a port by the SDK headers on the sandbox URL and previews it by its host name', async () => {
    const sandbox = await provider().create({ metadata: {} })
    created.push(sandbox.id)
    expect(sandbox.portEndpoint?.(8000)).toEqual({
      url: host.sandboxUrl.replace(/\/+$/, ''),
      headers: {
        'E2b-Sandbox-Id': sandbox.id,
        'E2b-Sandbox-Port': '8000',
        'e2b-traffic-access-token': sandbox.native.trafficAccessToken,
      },
      previewUrl: `http://${sandbox.native.getHost(8000)}`,
    })
    expect(sandbox.native.getHost(8000)).toBe(`8000-${sandbox.id}.${host.domain}`)
    expect(sandbox.portEndpoint?.(8000, { protocol: 'ws' }).url).toBe(
      host.sandboxUrl.replace(/^http/, 'ws').replace(/\/+$/, ''),
    )
  })

  it('a network update is CAPABILITY_UNSUPPORTED here (no such endpoint), SANDBOX_NOT_FOUND once killed', async () => {
    const sandboxes = provider()
    const sandbox = await sandboxes.create({ metadata: {} })
    created.push(sandbox.id)
    await expect(sandboxes.updateNetwork?.(sandbox.id, { allowInternetAccess: true })).rejects.toMatchObject({
      code: 'CAPABILITY_UNSUPPORTED',
      sandboxId: sandbox.id,
    })
    await sandboxes.kill(sandbox.id)
    await expect(sandboxes.updateNetwork?.(sandbox.id, { allowInternetAccess: true })).rejects.toMatchObject({
      code: 'SANDBOX_NOT_FOUND',
    })
  })
})
