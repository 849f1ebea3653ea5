import { describe, expect, it } from 'vitest'
import { probeFidelity } from './fidelity.js'
import type { ProcessInfo, SandboxHandle } from './sandbox-provider.js'
import type { TurnManifest } from './session-store.js'

// A sandbox that only answers the process list: memory and files are not recorded in these manifests.
function sandboxWith(processes: ProcessInfo[]): SandboxHandle {
  return { listProcesses: async () => processes } as unknown as SandboxHandle
}

const manifest: TurnManifest = {
  writtenAt: 0,
  sandboxId: 'sbx',
  memory: null,
  filesystem: null,
  processes: [
    { pid: 7, command: 'python3 server.py' },
    { pid: 9, command: 'node worker.js' },
  ],
}

describe('probeFidelity: processes', () => {
  const signal = new AbortController().signal

  it('kept with the same pids: survived, not restarted', async () => {
    const outcome = await probeFidelity(sandboxWith(manifest.processes!), manifest, signal)
    expect(outcome.survived.processes).toBe(true)
    expect(outcome.processesRestarted).toBe(false)
  })

  it('running again under new pids: survived and restarted, so port checks wait for them to listen', async () => {
    const restarted = [
      { pid: 21, command: 'python3 server.py' },
      { pid: 22, command: 'node worker.js' },
    ]
    const outcome = await probeFidelity(sandboxWith(restarted), manifest, signal)
    expect(outcome.survived.processes).toBe(true)
    expect(outcome.processesRestarted).toBe(true)
  })

  it('gone: lost and not restarted, so nothing waits for a server nobody is starting', async () => {
    const outcome = await probeFidelity(sandboxWith([]), manifest, signal)
    expect(outcome.survived.processes).toBe(false)
    expect(outcome.processesRestarted).toBe(false)
    expect(outcome.checks.find((check) => check.name === 'processes')?.message).toMatch(
      /not running any more/,
    )
  })

  it('one kept, one gone: lost, and not counted as restarted', async () => {
    const outcome = await probeFidelity(
      sandboxWith([{ pid: 7, command: 'python3 server.py' }]),
      manifest,
      signal,
    )
    expect(outcome.survived.processes).toBe(false)
    expect(outcome.processesRestarted).toBe(false)
  })
})
