import { SandkeepError } from '@sandkeep/core'
import { describe, expect, it } from 'vitest'
import { createMockProvider } from './mock-provider.js'
import { sandboxProviderConformance } from './provider-conformance.js'

// The mock is a SandboxProvider like any other: it passes the same suite, at each fidelity it imitates.
sandboxProviderConformance({
  name: 'mock provider (keeps everything; snapshots keep files)',
  provider: () => createMockProvider(),
  snapshotKeeps: { files: true, memory: false },
})
sandboxProviderConformance({
  name: 'mock provider (filesystem only)',
  provider: () => createMockProvider({ pauseKeeps: { memory: false, processes: false } }),
  pauseKeeps: { memory: false, filesystem: true, processes: false },
})
sandboxProviderConformance({
  name: 'mock provider (snapshots keep memory too)',
  provider: () => createMockProvider({ snapshots: { keepsMemory: true } }),
  snapshotKeeps: { files: true, memory: true },
})
sandboxProviderConformance({
  name: 'mock provider (no snapshots)',
  provider: () => createMockProvider({ snapshots: false }),
  snapshotKeeps: false,
})
sandboxProviderConformance({
  name: 'mock provider (processes restarted, files lost)',
  provider: () =>
    createMockProvider({ pauseKeeps: { memory: false, filesystem: false, processes: 'restart' } }),
  pauseKeeps: { memory: false, filesystem: false, processes: 'restarted' },
})

describe('createMockProvider controls', () => {
  it('names ports under .invalid, records network updates, and leaves out either on request', async () => {
    const provider = createMockProvider()
    const sandbox = await provider.create({ metadata: {} })
    expect(sandbox.portEndpoint?.(8000)).toEqual({
      url: `http://8000-${sandbox.id}.mock.invalid`,
      headers: {},
      previewUrl: `http://8000-${sandbox.id}.mock.invalid`,
    })
    await provider.updateNetwork?.(sandbox.id, { allowOut: ['pypi.org'], denyOut: ['0.0.0.0/0'] })
    expect(provider.sandboxes.get(sandbox.id)?.network).toEqual({
      allowOut: ['pypi.org'],
      denyOut: ['0.0.0.0/0'],
    })
    expect(provider.callsOf('updateNetwork')).toHaveLength(1)
    await provider.pause?.(sandbox.id)
    await expect(provider.updateNetwork?.(sandbox.id, {})).rejects.toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
    })
    const bare = createMockProvider({ without: ['updateNetwork', 'portEndpoint'] })
    expect(bare.updateNetwork).toBeUndefined()
    expect((await bare.create({ metadata: {} })).portEndpoint).toBeUndefined()
  })

  it('records calls and fails on demand, then recovers', async () => {
    const provider = createMockProvider()
    provider.failNext('create', 'SANDBOX_UNAVAILABLE', { times: 2, retryAfterMs: 10 })
    const first = await provider.create({ metadata: {} }).catch((e: unknown) => e)
    expect(first).toMatchObject({ code: 'SANDBOX_UNAVAILABLE', retryable: true, retryAfterMs: 10 })
    await expect(provider.create({ metadata: {} })).rejects.toBeInstanceOf(SandkeepError)
    const sandbox = await provider.create({ metadata: { a: 'b' } })
    expect(provider.callsOf('create')).toHaveLength(3)
    await sandbox.runCommand('echo hi')
    expect(provider.calls.at(-1)).toMatchObject({
      operation: 'runCommand',
      sandboxId: sandbox.id,
      detail: 'echo hi',
    })
    provider.clearCalls()
    expect(provider.calls).toEqual([])
  })

  it('re-maps ids, expires and drops memory like a platform would', async () => {
    const provider = createMockProvider()
    const sandbox = await provider.create({ metadata: {} })
    await sandbox.runCode('v = 1')
    await sandbox.startProcess('server 8080')
    provider.dropMemory(sandbox.id)
    expect((await sandbox.runCode("globals().get('v')")).text).toBeNull()
    expect(await sandbox.listProcesses()).toEqual([])
    provider.remapNextConnect(sandbox.id)
    const moved = await provider.connect(sandbox.id)
    expect(moved.id).not.toBe(sandbox.id)
    await expect(provider.connect(sandbox.id)).rejects.toMatchObject({ code: 'SANDBOX_NOT_FOUND' })
    provider.expire(moved.id)
    await expect(provider.connect(moved.id)).rejects.toMatchObject({ code: 'SANDBOX_NOT_FOUND' })
  })

  // Users test plotting agents with the mock through `onCode` results.
  it('reports the last value as the main result and passes onCode rich results and output through', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC'
    const provider = createMockProvider({
      onCode: (code) =>
        code === 'plot()'
          ? {
              text: null,
              results: [{ isMainResult: false, png, text: '<Figure>' }],
              stdout: 'plotting\n',
              stderr: '',
              error: null,
            }
          : undefined,
    })
    const sandbox = await provider.create({ metadata: {} })
    expect((await sandbox.runCode('1 + 1')).results).toEqual([{ isMainResult: true, text: '2' }])
    expect((await sandbox.runCode('v = 1')).results).toEqual([])
    const printed: string[] = []
    const plotted = await sandbox.runCode('plot()', { onStdout: (chunk) => printed.push(chunk) })
    expect(plotted.results).toEqual([{ isMainResult: false, png, text: '<Figure>' }])
    expect(printed).toEqual(['plotting\n'])
  })

  it('refuses calls on a paused sandbox until it is connected again', async () => {
    const provider = createMockProvider()
    const sandbox = await provider.create({ metadata: {} })
    await provider.pause?.(sandbox.id)
    await expect(sandbox.runCommand('true')).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' })
    const again = await provider.connect(sandbox.id)
    expect((await again.runCommand('true')).exitCode).toBe(0)
  })

  it('can leave out capabilities', () => {
    const provider = createMockProvider({ without: ['pause', 'list'] })
    expect(provider.pause).toBeUndefined()
    expect(provider.list).toBeUndefined()
    expect(typeof provider.getInfo).toBe('function')
  })

  it('snapshots: copies that outlive their sandbox, memory only when configured, calls recorded', async () => {
    const provider = createMockProvider({ snapshots: { keepsMemory: true } })
    const source = await provider.create({ metadata: {}, envs: { FROM: 'source' } })
    await source.writeFile('/home/user/a.txt', 'a')
    await source.runCode('v = 7')
    await source.startProcess('server 8080')
    const { snapshotId } = await provider.createSnapshot!(source.id, { name: 'base' })
    await source.writeFile('/home/user/a.txt', 'changed')
    await provider.kill(source.id)
    const copy = await provider.createFromSnapshot!(snapshotId, {
      metadata: { 'sandkeep.session': 's1' },
      envs: { OWN: 'copy' },
    })
    expect(await copy.readFile('/home/user/a.txt')).toBe('a')
    expect((await copy.runCode('v')).text).toBe('7')
    expect((await copy.listProcesses()).map((p) => p.command)).toEqual(['server 8080'])
    expect(copy.native).toMatchObject({
      metadata: { 'sandkeep.session': 's1' },
      envs: { FROM: 'source', OWN: 'copy' },
      template: snapshotId,
    })
    // The same name replaces the snapshot under the same id, as E2B assigns a new build to the name.
    const again = await provider.createSnapshot!(copy.id, { name: 'base' })
    expect(again.snapshotId).toBe(snapshotId)
    expect(provider.snapshots.size).toBe(1)
    expect(provider.calls.filter((c) => c.operation.includes('napshot'))).toMatchObject([
      { operation: 'createSnapshot', sandboxId: source.id, detail: 'base' },
      { operation: 'createFromSnapshot', detail: snapshotId },
      { operation: 'createSnapshot', sandboxId: copy.id, detail: 'base' },
    ])

    const filesOnly = createMockProvider()
    expect(filesOnly.snapshotKeeps).toEqual({ files: true, memory: false })
    const plain = await filesOnly.create({ metadata: {} })
    await plain.runCode('v = 7')
    await plain.startProcess('server 8080')
    const cold = await filesOnly.createFromSnapshot!((await filesOnly.createSnapshot!(plain.id)).snapshotId, {
      metadata: {},
    })
    expect((await cold.runCode("globals().get('v')")).text).toBeNull()
    expect(await cold.listProcesses()).toEqual([])
  })

  it('snapshots: a vanished one is SNAPSHOT_NOT_FOUND, failures on demand, a paused sandbox refused, bad input before any call', async () => {
    const provider = createMockProvider()
    const sandbox = await provider.create({ metadata: {} })
    const { snapshotId } = await provider.createSnapshot!(sandbox.id)
    expect(provider.expireSnapshot(snapshotId)).toBe(true)
    expect(provider.expireSnapshot(snapshotId)).toBe(false)
    await expect(provider.createFromSnapshot!(snapshotId, { metadata: {} })).rejects.toMatchObject({
      code: 'SNAPSHOT_NOT_FOUND',
    })
    expect(await provider.deleteSnapshot!(snapshotId)).toBe(false)

    provider.failNext('createSnapshot', 'SANDBOX_UNAVAILABLE')
    await expect(provider.createSnapshot!(sandbox.id)).rejects.toMatchObject({
      code: 'SANDBOX_UNAVAILABLE',
      retryable: true,
    })
    provider.failNext('createFromSnapshot', 'SNAPSHOT_NOT_FOUND')
    const kept = await provider.createSnapshot!(sandbox.id)
    await expect(provider.createFromSnapshot!(kept.snapshotId, { metadata: {} })).rejects.toMatchObject({
      code: 'SNAPSHOT_NOT_FOUND',
    })
    expect(provider.snapshots.has(kept.snapshotId)).toBe(true)

    await provider.pause!(sandbox.id)
    await expect(provider.createSnapshot!(sandbox.id)).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' })

    provider.clearCalls()
    await expect(provider.createSnapshot!(sandbox.id, { name: 'no spaces' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(provider.createFromSnapshot!('', { metadata: {} })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(provider.listSnapshots!({ namePrefix: 'a b' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    expect(provider.calls).toEqual([])
  })

  it('snapshots: listed newest first by name prefix, in pages; left out on request', async () => {
    const provider = createMockProvider()
    const sandbox = await provider.create({ metadata: {} })
    const ids: string[] = []
    for (const name of ['sk-1-a', 'sk-1-b', 'sk-2-a']) {
      ids.push((await provider.createSnapshot!(sandbox.id, { name })).snapshotId)
    }
    await provider.createSnapshot!(sandbox.id)
    const first = await provider.listSnapshots!({ namePrefix: 'sk-1-', limit: 1 })
    expect(first.snapshots.map((s) => s.names)).toEqual([['sk-1-b']])
    expect(first.snapshots[0]).toMatchObject({ snapshotId: ids[1], sandboxId: sandbox.id })
    const second = await provider.listSnapshots!({ namePrefix: 'sk-1-', limit: 1, cursor: first.cursor })
    expect(second).toEqual({ snapshots: [expect.objectContaining({ snapshotId: ids[0] })] })
    expect((await provider.listSnapshots!()).snapshots).toHaveLength(4)

    expect(createMockProvider({ without: ['listSnapshots'] }).listSnapshots).toBeUndefined()
    const none = createMockProvider({ snapshots: false })
    expect([none.snapshotKeeps, none.createSnapshot, none.createFromSnapshot, none.deleteSnapshot]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ])
  })
})
