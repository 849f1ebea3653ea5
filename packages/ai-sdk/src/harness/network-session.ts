// The network sandbox session the harness holds for one harness session: a sandkeep turn, begun by the
// provider, ended by stop() (pause, auto-pause, keep or kill: the manager's policy) and, with the session
// itself, by destroy(). Port addresses come from the provider's handle and need no turn: they name the
// sandbox, paused or running, for as long as it keeps its id.
import type { HarnessV1NetworkPolicy, HarnessV1PortEndpoint } from '@ai-sdk/harness'
import { type PortEndpoint, type SandboxHandle, SandkeepError, turnEndedError } from '@sandkeep/core'
import { validatePort } from '@sandkeep/core/provider'
import { invalid } from '../errors.js'
import type { SandkeepSandboxSession } from '../sandbox-session/index.js'
import { toSandboxNetworkPolicy } from './network-policy.js'
import type { HarnessSettings } from './options.js'
import type { SandkeepNetworkSandboxSession } from './types.js'

type PortProtocol = 'http' | 'https' | 'ws'

/** What the provider hands over once the turn's sandbox is ready. */
export interface NetworkSessionInput {
  settings: HarnessSettings
  /** The sandbox session that owns the turn. */
  sandbox: SandkeepSandboxSession
  /** Its restricted view, for the harness's tools. */
  restricted: SandkeepSandboxSession
  /** The ready sandbox. */
  handle: SandboxHandle
  firstCreateRan: boolean
}

export function createNetworkSession(input: NetworkSessionInput): SandkeepNetworkSandboxSession {
  const { settings, sandbox, restricted, handle, firstCreateRan } = input
  const { conversationId, tenant } = sandbox
  // Read now: the turn's handle refuses `id` once the turn has ended, and the report is set by the resume.
  const sandboxId = handle.id
  const report = sandbox.report
  if (!report) throw new Error('createNetworkSession needs a resumed sandbox session.')
  const unsupported = (message: string) =>
    new SandkeepError({ code: 'CAPABILITY_UNSUPPORTED', message, conversationId, tenant, sandboxId })

  let stopping: Promise<void> | undefined
  let destroying: Promise<void> | undefined
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      clearTimeout(overdue)
      await sandbox.end()
    })()
    return stopping
  }
  // A session nobody stops (detached, its owner gone) would hold its lease and keep the sandbox running.
  const overdue =
    settings.maxDurationMs > 0
      ? setTimeout(() => void stop().catch(() => {}), settings.maxDurationMs)
      : undefined
  overdue?.unref()

  const endpointOf = (port: number, protocol: PortProtocol | undefined): PortEndpoint => {
    validatePort(port)
    if (protocol !== undefined && protocol !== 'http' && protocol !== 'https' && protocol !== 'ws') {
      throw invalid(
        `getPortEndpoint: protocol must be 'http', 'https' or 'ws', got ${JSON.stringify(protocol)}.`,
      )
    }
    const resolve = handle.portEndpoint
    if (!resolve) {
      throw unsupported(
        `Provider '${handle.providerId}' routes no ports to its sandboxes: nothing outside can reach port ${port}.`,
      )
    }
    // The platform decides whether its scheme is the secure one (E2B's always is): https asks nothing more.
    return resolve(port, { protocol: protocol === 'ws' ? 'ws' : 'http' })
  }

  return {
    id: sandboxId,
    defaultWorkingDirectory: sandbox.workingDirectory,
    ports: settings.ports,
    conversationId,
    tenant,
    report,
    get endReport() {
      // The session's own: its end is the one end of the turn.
      return sandbox.endReport
    },
    firstCreateRan,
    get description() {
      return restricted.description
    },
    readFile: restricted.readFile,
    readBinaryFile: restricted.readBinaryFile,
    readTextFile: restricted.readTextFile,
    writeFile: restricted.writeFile,
    writeBinaryFile: restricted.writeBinaryFile,
    writeTextFile: restricted.writeTextFile,
    stat: restricted.stat,
    listDirectory: restricted.listDirectory,
    deleteFile: restricted.deleteFile,
    run: restricted.run,
    spawn: restricted.spawn,
    getPortEndpoint: async ({ port, protocol }): Promise<HarnessV1PortEndpoint> => {
      const { url, headers } = endpointOf(port, protocol)
      return Object.keys(headers).length > 0 ? { url, headers } : { url }
    },
    // Deprecated in the spec: a bare string cannot carry routing headers, so it is the header-less address.
    getPortUrl: async ({ port, protocol }) => {
      const endpoint = endpointOf(port, protocol)
      if (!endpoint.previewUrl) return endpoint.url
      return protocol === 'ws' ? endpoint.previewUrl.replace(/^http/, 'ws') : endpoint.previewUrl
    },
    stop,
    destroy: () => {
      destroying ??= (async () => {
        await stop()
        await settings.sessions.endSession(conversationId, { tenant })
      })()
      return destroying
    },
    setNetworkPolicy: async (policy: HarnessV1NetworkPolicy) => {
      const mapped = toSandboxNetworkPolicy(policy)
      if (sandbox.ended)
        throw turnEndedError(
          { conversationId, tenant, sandboxId },
          'this harness sandbox session was stopped: resume it first',
        )
      const { provider } = settings.sessions
      if (!provider.updateNetwork) {
        throw unsupported(
          `Provider '${provider.providerId}' cannot change a running sandbox's network: create it with the access it needs (the manager's sandbox.allowInternetAccess).`,
        )
      }
      await provider.updateNetwork(sandboxId, mapped)
    },
    restricted: () => restricted,
  }
}
