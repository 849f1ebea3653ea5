// A running sandbox's outbound policy. E2B's network update (`Sandbox.updateNetwork`) replaces the whole
// egress configuration: allow and deny lists and internet access (sandkeep creates its sandboxes with no
// per-host rules or egress proxy, so nothing else is lost). What E2B lets change on a running sandbox is
// exactly this; public traffic, the request host mask and TLS ports are fixed at creation.
import { Sandbox } from '@e2b/code-interpreter'
import {
  type SandboxNetworkPolicy,
  type SandboxProvider,
  SandkeepError,
  validateNetworkPolicy,
  validateSandboxId,
} from '@sandkeep/core/provider'
import { fromE2BError, withE2BErrors } from './errors.js'
import { type Connection, requestOptions } from './options.js'

export function networkCalls(connection: Connection): Pick<SandboxProvider<Sandbox>, 'updateNetwork'> {
  return {
    updateNetwork: (sandboxId, policy, options) =>
      withE2BErrors({ operation: 'updateNetwork', sandboxId }, async () => {
        validateSandboxId(sandboxId)
        const update: SandboxNetworkPolicy = { ...validateNetworkPolicy(policy) }
        const opts = requestOptions(connection, options?.signal)
        try {
          await Sandbox.updateNetwork(sandboxId, update, opts)
        } catch (error) {
          const converted = fromE2BError(error, { operation: 'updateNetwork', sandboxId })
          if (converted.code !== 'SANDBOX_NOT_FOUND') throw converted
          // The SDK says "not found" for any 404, and a platform without the endpoint answers 404 too: the
          // sandbox answering getInfo means the platform, not the sandbox, is what is missing.
          await Sandbox.getInfo(sandboxId, opts)
          throw new SandkeepError({
            code: 'CAPABILITY_UNSUPPORTED',
            message: `This E2B-compatible platform cannot change a running sandbox's network (its API has no network update; E2B cloud has): create the sandbox with the access it needs.`,
            sandboxId,
            cause: error,
          })
        }
      }),
  }
}
