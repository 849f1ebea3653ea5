import { SANDKEEP_METADATA, sessionMetadata } from '../contract/sandbox-metadata.js'
import type { CreateSandboxOptions } from '../contract/sandbox-provider.js'
import type { SessionKey } from '../contract/validation.js'
import { SANDKEEP_VERSION } from '../contract/version.js'
import type { ResolvedOptions } from './options.js'

/**
 * What `provider.create` gets for a session: the configured sandbox plus sandkeep's metadata. No abort
 * signal: a create the platform received must be answered, or its sandbox could never be killed.
 */
export function sandboxCreateOptions(config: ResolvedOptions, key: SessionKey): CreateSandboxOptions {
  const { sandbox } = config
  return {
    ...(sandbox.template ? { template: sandbox.template } : {}),
    timeoutMs: sandbox.timeoutMs,
    metadata: {
      ...sandbox.metadata,
      ...sessionMetadata(key),
      [SANDKEEP_METADATA.version]: SANDKEEP_VERSION,
    },
    ...(sandbox.envs ? { envs: sandbox.envs } : {}),
    allowInternetAccess: sandbox.allowInternetAccess,
    ...(sandbox.lifecycle ? { lifecycle: { ...sandbox.lifecycle } } : {}),
    ...(sandbox.network ? { network: structuredClone(sandbox.network) } : {}),
    ...(sandbox.secure !== undefined ? { secure: sandbox.secure } : {}),
  }
}
