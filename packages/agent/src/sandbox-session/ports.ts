// How a client outside the sandbox reaches a server the sandbox runs: the provider's port endpoint, taken
// from the resumed handle. The address is computed, not fetched, so it also serves a page the user opens
// after the turn (while the sandbox is paused, the platform answers or wakes it, by its auto-resume).
import { SandkeepError } from '@sandkeep/core'
import { validatePort } from '@sandkeep/core/provider'
import type { SandboxSession, SessionContext } from './types.js'

export function portOperations(context: SessionContext): Pick<SandboxSession, 'portEndpoint'> {
  return {
    portEndpoint: (port, portOptions = {}) => {
      try {
        validatePort(port)
      } catch (error) {
        return Promise.reject(error)
      }
      return context.operation(portOptions.abortSignal, async (handle) => {
        if (!handle.portEndpoint) {
          throw new SandkeepError({
            code: 'CAPABILITY_UNSUPPORTED',
            message: `Provider '${handle.providerId}' routes no ports to its sandboxes: a server in the sandbox cannot be reached from outside.`,
            conversationId: context.conversationId,
            tenant: context.tenant,
            sandboxId: handle.id,
          })
        }
        return handle.portEndpoint(port, portOptions.protocol ? { protocol: portOptions.protocol } : {})
      })
    },
  }
}
