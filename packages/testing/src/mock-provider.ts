// A SandboxProvider that keeps its sandboxes in memory, records every call, and fails on demand, so users
// can unit-test agents (and sandkeep tests its manager) without a sandbox platform. It imitates, not runs:
// commands understand a few shell words, code a tiny expression language. Plug in `onCommand`/`onCode` for
// more, `onProbe` to answer the session manager's fidelity probe. The parts live in ./mock/.
import { SandkeepError } from '@sandkeep/core'
import { validateNetworkPolicy } from '@sandkeep/core/provider'
import { handleFor } from './mock/handle.js'
import { createPlatform, infoOf, type MockPlatform, nextSerial, pageOf } from './mock/platform.js'
import { snapshotOps } from './mock/snapshots.js'
import { startSandbox } from './mock/start.js'
import type { MockProvider, MockProviderOptions } from './mock/types.js'

export type {
  MockOperation,
  MockPauseFidelity,
  MockProbe,
  MockProbeAnswer,
  MockProvider,
  MockProviderCall,
  MockProviderOptions,
  MockSandbox,
  MockSnapshot,
} from './mock/types.js'

type SandboxOps = Pick<MockProvider, 'create' | 'connect' | 'kill' | 'pause' | 'setTimeout'>

function sandboxOps(platform: MockPlatform): SandboxOps {
  const { sandboxes, keeps } = platform
  return {
    async create(createOptions) {
      await platform.enter('create', undefined, createOptions.template)
      return startSandbox(platform, createOptions)
    },
    async connect(sandboxId, connectOptions) {
      await platform.enter('connect', sandboxId)
      const sandbox = platform.existing(sandboxId)
      if (sandbox.state === 'paused') {
        sandbox.state = 'running'
        if (keeps.processes === 'restart') {
          sandbox.processes = sandbox.processes.map((p) => ({ ...p, pid: platform.nextPid() }))
        }
      }
      if (connectOptions?.timeoutMs) sandbox.endAt = Date.now() + connectOptions.timeoutMs
      if (platform.remaps.delete(sandboxId)) {
        sandboxes.delete(sandboxId)
        sandbox.id = `${sandboxId}-r${nextSerial()}`
        sandboxes.set(sandbox.id, sandbox)
      }
      return handleFor(platform, sandbox)
    },
    async kill(sandboxId) {
      await platform.enter('kill', sandboxId)
      return sandboxes.delete(sandboxId)
    },
    async pause(sandboxId) {
      await platform.enter('pause', sandboxId)
      const sandbox = platform.existing(sandboxId)
      if (sandbox.state === 'paused') return false
      sandbox.state = 'paused'
      if (!keeps.memory) sandbox.memory.clear()
      if (keeps.processes === false) sandbox.processes = []
      if (!keeps.filesystem) sandbox.files.clear()
      return true
    },
    async setTimeout(sandboxId, timeoutMs) {
      await platform.enter('setTimeout', sandboxId, String(timeoutMs))
      platform.existing(sandboxId).endAt = Date.now() + timeoutMs
    },
  }
}

function queryOps(platform: MockPlatform): Pick<MockProvider, 'list' | 'getInfo' | 'updateNetwork'> {
  return {
    async list(listOptions) {
      await platform.enter('list')
      const matches = [...platform.sandboxes.values()].filter(
        (s) =>
          Object.entries(listOptions?.metadata ?? {}).every(([k, v]) => s.metadata[k] === v) &&
          (!listOptions?.state || listOptions.state.includes(s.state)),
      )
      const { page, cursor } = pageOf(matches, listOptions)
      return { sandboxes: page.map(infoOf), ...(cursor ? { cursor } : {}) }
    },
    async getInfo(sandboxId) {
      await platform.enter('getInfo', sandboxId)
      return infoOf(platform.existing(sandboxId))
    },
    async updateNetwork(sandboxId, policy) {
      validateNetworkPolicy(policy)
      await platform.enter('updateNetwork', sandboxId, JSON.stringify(policy))
      platform.running(sandboxId).network = structuredClone(policy)
    },
  }
}

type Controls = Pick<
  MockProvider,
  'callsOf' | 'failNext' | 'remapNextConnect' | 'expire' | 'expireSnapshot' | 'dropMemory' | 'clearCalls'
>

function controls(platform: MockPlatform): Controls {
  const { calls, failures } = platform
  return {
    callsOf: (operation) => calls.filter((c) => c.operation === operation),
    failNext(operation, failure, failOptions = {}) {
      const make = (): Error => {
        if (failure instanceof Error) return failure
        return new SandkeepError({
          code: failure,
          message: failOptions.message ?? `Injected ${failure} on ${operation}.`,
          retryable: failure === 'SANDBOX_UNAVAILABLE' || failure === 'STORE_UNAVAILABLE',
          ...(failOptions.retryAfterMs !== undefined ? { retryAfterMs: failOptions.retryAfterMs } : {}),
        })
      }
      const queue = failures.get(operation) ?? []
      for (let i = 0; i < (failOptions.times ?? 1); i++) queue.push(make)
      failures.set(operation, queue)
    },
    remapNextConnect(sandboxId) {
      platform.remaps.add(sandboxId)
    },
    expire(sandboxId) {
      platform.sandboxes.delete(sandboxId)
    },
    expireSnapshot(snapshotId) {
      return platform.snapshots.delete(snapshotId)
    },
    dropMemory(sandboxId) {
      const sandbox = platform.existing(sandboxId)
      sandbox.memory.clear()
      sandbox.processes = []
    },
    clearCalls() {
      calls.length = 0
    },
  }
}

/** Creates a {@link MockProvider}. */
export function createMockProvider(options: MockProviderOptions = {}): MockProvider {
  const platform = createPlatform(options)
  const provider: MockProvider = {
    specificationVersion: 'v1',
    providerId: platform.providerId,
    defaultTemplate: 'mock-template',
    calls: platform.calls,
    sandboxes: platform.sandboxes,
    snapshots: platform.snapshots,
    ...sandboxOps(platform),
    ...queryOps(platform),
    ...(options.snapshots === false ? {} : snapshotOps(platform, options.snapshots ?? {})),
    ...controls(platform),
  }
  for (const capability of options.without ?? []) {
    delete (provider as unknown as Record<string, unknown>)[capability]
  }
  return provider
}
