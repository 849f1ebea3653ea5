// The JSON E2B's API answers for a sandbox on create, connect and fork; below the control plane and the
// snapshot service, which both answer it.
import type { Json } from './http.js'
import type { Sandbox } from './sandbox.js'

/** envd version reported to the SDK; gates its features (0.6.4 = metadata, watch entries, octet uploads). */
export const ENVD_VERSION = '0.6.4'

/**
 * What create, connect and each fork answer. `domain` (the host's, known once it listens) makes the SDK's
 * getHost(port) name this host: `<port>-<id>.<domain>`.
 */
export function sandboxJson(sandbox: Sandbox, domain: string | undefined): Json {
  const body: Json = {
    sandboxID: sandbox.id,
    templateID: sandbox.record.templateId,
    clientID: 'local',
    envdVersion: ENVD_VERSION,
    envdAccessToken: sandbox.record.envdAccessToken,
    trafficAccessToken: sandbox.trafficAccessToken,
  }
  if (domain) body.domain = domain
  if (sandbox.record.alias) body.alias = sandbox.record.alias
  return body
}
