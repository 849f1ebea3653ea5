// The harness's outbound network policy in the terms a sandkeep provider takes (E2B's): internet access on
// or off, or an allow list with everything else denied. E2B's allow list wins over its deny list, so a
// denied range inside an allowed one cannot be expressed: that policy is refused, not half applied.
import type { HarnessV1NetworkPolicy } from '@ai-sdk/harness'
import { type SandboxNetworkPolicy, SandkeepError } from '@sandkeep/core'
import { invalid } from '../errors.js'

/** Everything, as E2B's deny list names it. */
const ALL_TRAFFIC = '0.0.0.0/0'

/**
 * @throws SandkeepError INVALID_ARGUMENT for a malformed policy, CAPABILITY_UNSUPPORTED for `deniedCIDRs`.
 */
export function toSandboxNetworkPolicy(policy: HarnessV1NetworkPolicy): SandboxNetworkPolicy {
  if (typeof policy !== 'object' || policy === null) throw invalid('setNetworkPolicy needs a policy object.')
  switch (policy.mode) {
    case 'allow-all':
      return { allowInternetAccess: true }
    case 'deny-all':
      return { allowInternetAccess: false }
    case 'custom': {
      if ((policy.deniedCIDRs?.length ?? 0) > 0) {
        throw new SandkeepError({
          code: 'CAPABILITY_UNSUPPORTED',
          message:
            "deniedCIDRs cannot be applied: E2B's allow list takes precedence over its deny list, so a denied range would not be carved out of the allowed hosts. List only what to allow.",
        })
      }
      const allowOut = [...(policy.allowedHosts ?? []), ...(policy.allowedCIDRs ?? [])]
      if (allowOut.length === 0) {
        throw invalid(
          "setNetworkPolicy: a 'custom' policy needs allowedHosts or allowedCIDRs; use 'deny-all' for none.",
        )
      }
      return { allowOut, denyOut: [ALL_TRAFFIC] }
    }
    default:
      throw invalid(
        `setNetworkPolicy: mode must be 'allow-all', 'deny-all' or 'custom', got ${JSON.stringify((policy as { mode?: unknown }).mode)}.`,
      )
  }
}
