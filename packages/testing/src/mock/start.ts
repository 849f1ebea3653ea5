// A new mock sandbox, empty or made from a snapshot: the one place `create` and `createFromSnapshot` share.
import type { CreateSandboxOptions, SandboxHandle } from '@sandkeep/core/provider'
import { handleFor } from './handle.js'
import { type MockPlatform, nextSerial } from './platform.js'
import type { MockSandbox, MockSnapshot } from './types.js'

/** Files copied byte for byte: a sandbox and its snapshots never share a buffer. */
export function copyFiles(files: Map<string, Uint8Array>): Map<string, Uint8Array> {
  return new Map([...files].map(([path, data]) => [path, data.slice()]))
}

/** Starts a sandbox on the platform and returns its handle. */
export function startSandbox(
  platform: MockPlatform,
  createOptions: CreateSandboxOptions,
  from?: MockSnapshot,
): SandboxHandle<MockSandbox> {
  const id = `mock-${process.pid}-${nextSerial()}`
  const sandbox: MockSandbox = {
    id,
    state: 'running',
    metadata: { ...createOptions.metadata },
    envs: { ...from?.envs, ...createOptions.envs },
    // As on E2B, a sandbox made from a snapshot reports the snapshot as its template.
    template: from ? from.snapshotId : (createOptions.template ?? 'mock-template'),
    files: from ? copyFiles(from.files) : new Map(),
    processes: from?.memory ? structuredClone(from.memory.processes) : [],
    memory: from?.memory ? structuredClone(from.memory.globals) : new Map(),
    createOptions,
    endAt: Date.now() + (createOptions.timeoutMs ?? 300_000),
    startedAt: new Date(),
  }
  platform.sandboxes.set(id, sandbox)
  return handleFor(platform, sandbox)
}
