import { describe, expect, it } from 'vitest'
import { SandkeepError } from '../contract/errors.js'
import type { ProcessInfo, SandboxHandle } from '../contract/sandbox-provider.js'
import type { TurnManifest } from '../contract/session-store.js'
import { PROBE_CELL_TAG, probeFidelity } from './fidelity.js'

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
    const outcome = await probeFidelity({ sandbox: sandboxWith(manifest.processes!), manifest, signal })
    expect(outcome.survived.processes).toBe(true)
    expect(outcome.processesRestarted).toBe(false)
  })

  it('running again under new pids: survived and restarted, so port checks wait for them to listen', async () => {
    const restarted = [
      { pid: 21, command: 'python3 server.py' },
      { pid: 22, command: 'node worker.js' },
    ]
    const outcome = await probeFidelity({ sandbox: sandboxWith(restarted), manifest, signal })
    expect(outcome.survived.processes).toBe(true)
    expect(outcome.processesRestarted).toBe(true)
  })

  it('gone: lost and not restarted, so nothing waits for a server nobody is starting', async () => {
    const outcome = await probeFidelity({ sandbox: sandboxWith([]), manifest, signal })
    expect(outcome.survived.processes).toBe(false)
    expect(outcome.processesRestarted).toBe(false)
    expect(outcome.checks.find((check) => check.name === 'processes')?.message).toMatch(
      /not running any more/,
    )
  })

  it('one kept, one gone: lost, and not counted as restarted', async () => {
    const outcome = await probeFidelity({
      sandbox: sandboxWith([{ pid: 7, command: 'python3 server.py' }]),
      manifest,
      signal,
    })
    expect(outcome.survived.processes).toBe(false)
    expect(outcome.processesRestarted).toBe(false)
  })
})

describe('probeFidelity: memory and files in one cell', () => {
  const signal = new AbortController().signal
  const both: TurnManifest = {
    writtenAt: 0,
    sandboxId: 'sbx',
    memory: [{ language: 'python', contextId: null, variable: '__sandkeep_sentinel__', value: 's-1' }],
    filesystem: { path: '/home/user/.sandkeep/marker', value: 'm-1' },
    processes: null,
  }

  /** A sandbox whose probe cell prints `answer`, counting the calls each probe makes. */
  function probed(answer: string | null, files: Record<string, string> = {}) {
    const calls = { runCode: [] as string[], readFile: [] as string[] }
    const sandbox = {
      runCode: async (code: string) => {
        calls.runCode.push(code)
        return answer === null
          ? { text: null, stdout: '', stderr: '', error: { name: 'NameError', value: 'x', traceback: '' } }
          : { text: null, stdout: `${answer}\n`, stderr: '', error: null }
      },
      readFile: async (path: string) => {
        calls.readFile.push(path)
        const content = files[path]
        if (content === undefined) throw new SandkeepError({ code: 'FILE_NOT_FOUND', message: 'gone' })
        return content
      },
    } as unknown as SandboxHandle
    return { sandbox, calls }
  }

  it('answers both probes with one interpreter call when they agree with the manifest', async () => {
    const { sandbox, calls } = probed('{"sentinel": "s-1", "marker": "m-1"}')
    const outcome = await probeFidelity({ sandbox, manifest: both, signal })
    expect(outcome.survived).toEqual({ memory: true, filesystem: true, processes: null })
    expect(calls.runCode).toHaveLength(1)
    expect(calls.runCode[0]).toMatch(new RegExp(`^${PROBE_CELL_TAG}`))
    expect(calls.readFile).toHaveLength(0)
  })

  it('tells a lost sentinel and a missing marker apart', async () => {
    const lostMemory = await probeFidelity({
      sandbox: probed('{"sentinel": null, "marker": "m-1"}').sandbox,
      manifest: both,
      signal,
    })
    expect(lostMemory.survived).toEqual({ memory: false, filesystem: true, processes: null })
    const lostFiles = await probeFidelity({
      sandbox: probed('{"sentinel": "s-1", "marker": null}').sandbox,
      manifest: both,
      signal,
    })
    expect(lostFiles.survived).toEqual({ memory: true, filesystem: false, processes: null })
  })

  it('asks envd for the marker when the interpreter could not read it or did not answer', async () => {
    const files = { '/home/user/.sandkeep/marker': 'm-1' }
    const unreadable = probed('{"sentinel": "s-1", "marker": {"error": "PermissionError()"}}', files)
    expect((await probeFidelity({ sandbox: unreadable.sandbox, manifest: both, signal })).survived).toEqual({
      memory: true,
      filesystem: true,
      processes: null,
    })
    expect(unreadable.calls.readFile).toEqual(['/home/user/.sandkeep/marker'])

    const failed = probed(null, files)
    expect((await probeFidelity({ sandbox: failed.sandbox, manifest: both, signal })).survived).toEqual({
      memory: false,
      filesystem: true,
      processes: null,
    })
    expect(failed.calls.readFile).toHaveLength(1)
  })
})

describe('probeFidelity: tampered markers and platform errors', () => {
  const signal = new AbortController().signal
  const policy = { retries: 1, minTimeoutMs: 0, maxTimeoutMs: 0 }
  const both: TurnManifest = {
    writtenAt: 0,
    sandboxId: 'sbx',
    memory: [{ language: 'python', contextId: null, variable: '__sandkeep_sentinel__', value: 's-1' }],
    filesystem: { path: '/home/user/.sandkeep/marker', value: 'm-1' },
    processes: [{ pid: 7, command: 'sleep 100' }],
  }
  const hiccup = () => new SandkeepError({ code: 'TIMEOUT', message: 'envd answered 502' })

  it('repairs a marker the interpreter says is not a regular file, without reading it through envd', async () => {
    const calls: string[] = []
    const sandbox = {
      runCode: async () => ({
        text: null,
        stdout: '{"sentinel": "s-1", "marker": {"unreadable": "not a regular file (mode 10644)"}}\n',
        stderr: '',
        error: null,
      }),
      readFile: async () => {
        calls.push('readFile')
        return new Promise<string>(() => {})
      },
      runCommand: async (command: string) => {
        calls.push(command)
        return { exitCode: 0, stdout: '', stderr: '' }
      },
      writeFile: async (path: string, data: string) => {
        calls.push(`write ${path} ${data}`)
      },
      listProcesses: async () => [{ pid: 7, command: 'sleep 100' }],
    } as unknown as SandboxHandle
    const outcome = await probeFidelity({ sandbox, manifest: both, signal, retry: policy })
    expect(outcome.survived).toEqual({ memory: true, filesystem: null, processes: true })
    expect(outcome.checks.find((c) => c.name === 'filesystem')?.status).toBe('repaired')
    expect(calls).toEqual([
      "rm -rf -- '/home/user/.sandkeep/marker'",
      'write /home/user/.sandkeep/marker m-1',
    ])
  })

  it('retries a probe that failed on the platform, and reports unknown (never lost) when it keeps failing', async () => {
    let failures = 1
    let listed = 0
    const flaky = {
      runCode: async () => {
        if (failures-- > 0) throw hiccup()
        return { text: null, stdout: '{"sentinel": "s-1", "marker": "m-1"}\n', stderr: '', error: null }
      },
      listProcesses: async () => {
        listed++
        throw hiccup()
      },
    } as unknown as SandboxHandle
    const outcome = await probeFidelity({ sandbox: flaky, manifest: both, signal, retry: policy })
    expect(outcome.survived).toEqual({ memory: true, filesystem: true, processes: null })
    // A timeout is not one the policy retries: asked once, then once more before the report is written.
    expect(listed).toBe(2)
    expect(outcome.checks.find((c) => c.name === 'processes')?.message).toMatch(/^unknown/)
  })
})
