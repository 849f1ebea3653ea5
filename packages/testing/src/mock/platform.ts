// The mock platform's state shared by the provider and its handles: sandboxes, recorded calls, injected
// failures and re-maps, and the entry every operation goes through (record, latency, injected failure).
import { SandkeepError } from '@sandkeep/core'
import type { SandboxInfo } from '@sandkeep/core/provider'
import type {
  MockOperation,
  MockProviderCall,
  MockProviderOptions,
  MockSandbox,
  MockSnapshot,
} from './types.js'

let counter = 0

/** A number unique in this process, for sandbox ids. */
export const nextSerial = () => ++counter

/** The mock platform behind one provider. */
export interface MockPlatform {
  options: MockProviderOptions
  providerId: string
  /** What a pause keeps. */
  keeps: { memory: boolean; filesystem: boolean; processes: boolean | 'restart' }
  sandboxes: Map<string, MockSandbox>
  snapshots: Map<string, MockSnapshot>
  calls: MockProviderCall[]
  failures: Map<MockOperation, Array<() => Error>>
  /** Ids whose next connect re-maps the sandbox to a new id. */
  remaps: Set<string>
  /** The next background process id. */
  nextPid(): number
  /** Records a call, waits the latency, and throws an injected failure if one is queued. */
  enter(operation: MockOperation, sandboxId?: string, detail?: string): Promise<void>
  /** The sandbox, which must exist (SANDBOX_NOT_FOUND) and run (SANDBOX_UNAVAILABLE when paused). */
  running(sandboxId: string): MockSandbox
  /** The sandbox, which must exist (SANDBOX_NOT_FOUND). */
  existing(sandboxId: string): MockSandbox
}

export function notFound(sandboxId: string): SandkeepError {
  return new SandkeepError({
    code: 'SANDBOX_NOT_FOUND',
    message: `Mock sandbox ${sandboxId} does not exist.`,
    sandboxId,
  })
}

/** One page of `items` as the mock's list calls answer: the cursor is the offset of the next page. */
export function pageOf<T>(
  items: T[],
  listOptions: { limit?: number; cursor?: string } | undefined,
): { page: T[]; cursor?: string } {
  const start = listOptions?.cursor ? Number(listOptions.cursor) : 0
  const limit = listOptions?.limit ?? 100
  const page = items.slice(start, start + limit)
  return start + limit < items.length ? { page, cursor: String(start + limit) } : { page }
}

export function infoOf(sandbox: MockSandbox): SandboxInfo {
  return {
    sandboxId: sandbox.id,
    templateId: sandbox.template,
    metadata: { ...sandbox.metadata },
    state: sandbox.state,
    startedAt: sandbox.startedAt,
    endAt: new Date(sandbox.endAt),
  }
}

export function createPlatform(options: MockProviderOptions): MockPlatform {
  const sandboxes = new Map<string, MockSandbox>()
  const calls: MockProviderCall[] = []
  const failures = new Map<MockOperation, Array<() => Error>>()
  let pid = 100
  const existing = (sandboxId: string) => {
    const sandbox = sandboxes.get(sandboxId)
    if (!sandbox) throw notFound(sandboxId)
    return sandbox
  }
  return {
    options,
    providerId: options.providerId ?? 'mock',
    keeps: { memory: true, filesystem: true, processes: true as boolean | 'restart', ...options.pauseKeeps },
    sandboxes,
    snapshots: new Map(),
    calls,
    failures,
    remaps: new Set(),
    nextPid: () => pid++,
    async enter(operation, sandboxId, detail) {
      calls.push({
        operation,
        at: Date.now(),
        ...(sandboxId ? { sandboxId } : {}),
        ...(detail !== undefined ? { detail } : {}),
      })
      if (options.latencyMs) await new Promise((resolve) => setTimeout(resolve, options.latencyMs))
      else await Promise.resolve()
      const make = failures.get(operation)?.shift()
      if (make) throw make()
    },
    running(sandboxId) {
      const sandbox = existing(sandboxId)
      if (sandbox.state === 'paused') {
        throw new SandkeepError({
          code: 'SANDBOX_UNAVAILABLE',
          message: `Mock sandbox ${sandboxId} is paused: connect to it first.`,
          sandboxId,
        })
      }
      return sandbox
    },
    existing,
  }
}
