import type { Sandbox } from '@e2b/code-interpreter'
import { SandkeepError } from '@sandkeep/core/provider'
import { describe, expect, it } from 'vitest'
import { portEndpointOf } from './ports.js'

/** The three fields of an SDK sandbox the endpoint reads, as E2B cloud fills them in. */
function cloudSandbox(trafficAccessToken?: string): Sandbox {
  const sandboxId = 'i7abc'
  return {
    sandboxId,
    trafficAccessToken,
    getHost: (port: number) => `${port}-${sandboxId}.e2b.app`,
  } as unknown as Sandbox
}

describe('portEndpointOf', () => {
  it("names E2B cloud's port hosts over TLS, ws as wss", () => {
    const endpoint = portEndpointOf(cloudSandbox(), { domain: 'e2b.app', apiKey: 'unused' })
    expect(endpoint(3000)).toEqual({
      url: 'https://3000-i7abc.e2b.app',
      headers: {},
      previewUrl: 'https://3000-i7abc.e2b.app',
    })
    expect(endpoint(3000, { protocol: 'ws' })).toEqual({
      url: 'wss://3000-i7abc.e2b.app',
      headers: {},
      previewUrl: 'https://3000-i7abc.e2b.app',
    })
  })

  it("puts the sandbox's traffic token, when it has one, on every request", () => {
    const endpoint = portEndpointOf(cloudSandbox('token-1'), { apiKey: 'unused' })
    expect(endpoint(8080)).toEqual({
      url: 'https://8080-i7abc.e2b.app',
      headers: { 'e2b-traffic-access-token': 'token-1' },
      previewUrl: 'https://8080-i7abc.e2b.app',
    })
  })

  it('routes by the SDK headers on a sandboxUrl, keeping its scheme and path', () => {
    const endpoint = portEndpointOf(cloudSandbox(), { sandboxUrl: 'http://127.0.0.1:3100/edge/' })
    expect(endpoint(8000, { protocol: 'ws' })).toEqual({
      url: 'ws://127.0.0.1:3100/edge',
      headers: { 'E2b-Sandbox-Id': 'i7abc', 'E2b-Sandbox-Port': '8000' },
      previewUrl: 'http://8000-i7abc.e2b.app',
    })
  })

  it('refuses a port outside 1-65535 with INVALID_ARGUMENT', () => {
    const endpoint = portEndpointOf(cloudSandbox(), {})
    for (const port of [0, 65_536, 1.5]) {
      expect(() => endpoint(port)).toThrow(SandkeepError)
    }
  })
})
