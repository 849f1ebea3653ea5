// How a client outside the sandbox reaches one of its ports. E2B names each port by a host of its own,
// `<port>-<sandboxId>.<domain>`, with TLS ended at its edge. A platform the SDK reaches through one
// `sandboxUrl` (local-e2b, a self-hosted proxy) also routes by the SDK's `E2b-Sandbox-Id` and
// `E2b-Sandbox-Port` headers on that URL; its host names are often under `localhost`, which browsers and
// curl send to loopback but Node's resolver does not. There the routed URL is what works for a program, and
// the host name is the preview a person opens.
import type { Sandbox } from '@e2b/code-interpreter'
import { type PortEndpoint, type SandboxHandle, validatePort } from '@sandkeep/core/provider'
import { ConnectionConfig } from 'e2b'
import type { Connection } from './options.js'

/**
 * The header E2B wants on every request to a sandbox created without public traffic. The platform hands
 * the token out for public sandboxes too (where it is ignored), so it goes on every endpoint it exists for.
 */
const TRAFFIC_TOKEN_HEADER = 'e2b-traffic-access-token'

/** `SandboxHandle.portEndpoint` for one SDK sandbox. */
export function portEndpointOf(
  sandbox: Sandbox,
  connection: Connection,
): NonNullable<SandboxHandle['portEndpoint']> {
  // Read as the SDK reads them (options, else E2B_SANDBOX_URL and E2B_DEBUG), once per handle.
  const config = new ConnectionConfig(connection)
  const routed = config.sandboxUrl ? new URL(config.sandboxUrl) : undefined
  const secure = !config.debug && (routed === undefined || routed.protocol === 'https:')
  return (port, options): PortEndpoint => {
    validatePort(port)
    const websocket = options?.protocol === 'ws'
    const token = sandbox.trafficAccessToken
    const auth: Record<string, string> = token ? { [TRAFFIC_TOKEN_HEADER]: token } : {}
    const host = sandbox.getHost(port)
    const named = `${schemeOf(websocket, secure)}://${host}`
    const previewUrl = `${schemeOf(false, secure)}://${host}`
    if (!routed) return { url: named, headers: auth, previewUrl }
    const url = `${schemeOf(websocket, routed.protocol === 'https:')}://${routed.host}${routed.pathname.replace(/\/+$/, '')}`
    return {
      url,
      headers: { 'E2b-Sandbox-Id': sandbox.sandboxId, 'E2b-Sandbox-Port': String(port), ...auth },
      previewUrl,
    }
  }
}

function schemeOf(websocket: boolean, secure: boolean): string {
  if (websocket) return secure ? 'wss' : 'ws'
  return secure ? 'https' : 'http'
}
