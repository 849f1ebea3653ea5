// createE2BProvider wires the provider together: options.ts checks the options, lifecycle.ts makes the
// lifecycle calls, snapshots.ts the snapshot calls, network.ts changes a running sandbox's network, handle.ts (with commands.ts, code.ts,
// files.ts, ports.ts) is the SandboxHandle over one SDK sandbox, and errors.ts converts every SDK error at
// the boundary.
import type { Sandbox } from '@e2b/code-interpreter'
import type { SandboxProvider } from '@sandkeep/core/provider'
import { lifecycleCalls } from './lifecycle.js'
import { networkCalls } from './network.js'
import {
  checkOptions,
  connectionOf,
  DEFAULT_TEMPLATE,
  type E2BProviderOptions,
  outputLimitsOf,
  snapshotKeepsOf,
} from './options.js'
import { snapshotCalls } from './snapshots.js'

export type { E2BProviderOptions } from './options.js'

/** The provider `createE2BProvider` returns: a SandboxProvider whose handles' `native` is the SDK `Sandbox`. */
export type E2BProvider = SandboxProvider<Sandbox> & {
  /** Always `'e2b'`. */
  readonly providerId: 'e2b'
}

/**
 * A SandboxProvider on the real E2B SDK (`@e2b/code-interpreter`'s `Sandbox`), for E2B cloud and any
 * E2B-compatible host (local-e2b, self-hosted). Synchronous: nothing is sent until the first call.
 * Connection options not given fall back to `E2B_API_KEY`, `E2B_API_URL`, `E2B_SANDBOX_URL`, `E2B_DOMAIN`.
 * @throws SandkeepError INVALID_ARGUMENT on bad options.
 */
export function createE2BProvider(options: E2BProviderOptions = {}): E2BProvider {
  checkOptions(options)
  const template = options.template ?? DEFAULT_TEMPLATE
  // Kept in the lifecycle calls' closure only: the provider object exposes no field holding the key.
  const connection = connectionOf(options)
  const limits = outputLimitsOf(options)
  const keeps = snapshotKeepsOf(options)
  return {
    specificationVersion: 'v1',
    providerId: 'e2b',
    defaultTemplate: template,
    // What E2B's create takes beyond the basics; `secure: false` is refused at create (E2B secures every sandbox).
    createCapabilities: ['lifecycle', 'network', 'secure'],
    ...lifecycleCalls(connection, template, limits),
    ...networkCalls(connection),
    ...(keeps ? snapshotCalls(connection, limits, keeps) : {}),
  }
}
