// Metrics through the unmodified e2b SDK: `sandbox.getMetrics()` and `Sandbox.getMetrics(id)` give samples of
// the sandbox's CPU, memory and disk, taken on the interval's boundaries from its cgroups and its disk image,
// selected by `start`/`end`; a paused sandbox is not sampled and a killed one is not found.
import { availableParallelism } from 'node:os'
import { Sandbox, type SandboxMetrics, SandboxNotFoundError } from 'e2b'
import { afterEach, describe, expect, it } from 'vitest'
import { useTestHost, waitUntil } from './helpers.js'

const INTERVAL_MS = 500
const MiB = 1024 * 1024

describe('metrics', () => {
  const t = useTestHost({
    metricsIntervalMs: INTERVAL_MS,
    limits: { memoryBytes: 256 * MiB, diskBytes: 512 * MiB },
  })
  const created: string[] = []
  afterEach(async () => {
    for (const id of created.splice(0)) await Sandbox.kill(id, t.opts).catch(() => {})
  })
  async function create() {
    const sandbox = await Sandbox.create(t.opts)
    created.push(sandbox.sandboxId)
    return sandbox
  }
  /** The latest sample once `accept` takes one (bounded wait). */
  async function sampleWhere(sandbox: Sandbox, accept: (metric: SandboxMetrics) => boolean) {
    let found: SandboxMetrics | undefined
    await waitUntil(async () => {
      found = (await sandbox.getMetrics()).filter(accept).at(-1)
      return found !== undefined
    }, 20_000)
    return found as SandboxMetrics
  }

  it('samples CPU, memory and disk of a running sandbox from its cgroups and its disk', async () => {
    const sandbox = await create()
    await sandbox.commands.run('sh -c "while :; do :; done"', { background: true, timeoutMs: 0 })
    // A busy loop shows as CPU use; on a loaded machine it gets only a slice of one CPU, so the bar is low.
    const busy = await sampleWhere(sandbox, (metric) => metric.cpuUsedPct > 1)
    expect(busy.cpuCount).toBe(availableParallelism())
    expect(busy.cpuUsedPct).toBeLessThanOrEqual(100)
    expect(busy.memTotal).toBe(256 * MiB)
    expect(busy.memUsed).toBeGreaterThan(0)
    expect(busy.memUsed).toBeLessThanOrEqual(busy.memTotal)
    expect(busy.memCache).toBeGreaterThanOrEqual(0)
    expect(busy.diskTotal).toBeGreaterThan(400 * MiB)
    expect(busy.diskTotal).toBeLessThanOrEqual(512 * MiB)
    expect(busy.diskUsed).toBeGreaterThan(0)

    // 100 MiB held by a process and 60 MiB written to the disk show in the next samples.
    await sandbox.commands.run(
      'python3 -c "import time; b = bytearray(100 * 1024 * 1024); b[::4096] = b\'x\' * len(b[::4096]); time.sleep(600)"',
      { background: true, timeoutMs: 0 },
    )
    await sandbox.commands.run('head -c 62914560 /dev/urandom > /home/user/blob && sync')
    const later = await sampleWhere(
      sandbox,
      (metric) => metric.memUsed >= busy.memUsed + 90 * MiB && metric.diskUsed >= busy.diskUsed + 55 * MiB,
    )
    expect(later.diskTotal).toBe(busy.diskTotal)

    const samples = await sandbox.getMetrics()
    for (const [index, metric] of samples.entries()) {
      expect(metric.timestamp.getTime() % INTERVAL_MS).toBe(0)
      if (index > 0)
        expect(metric.timestamp.getTime()).toBeGreaterThan(samples[index - 1]!.timestamp.getTime())
    }
  })

  it('start and end select samples; before the sandbox there are none; a paused sandbox gets no new ones', async () => {
    const sandbox = await create()
    const start = new Date()
    await waitUntil(async () => (await sandbox.getMetrics({ start })).length >= 2, 20_000)
    const end = new Date()
    const ranged = await Sandbox.getMetrics(sandbox.sandboxId, { ...t.opts, start, end })
    expect(ranged.length).toBeGreaterThanOrEqual(1)
    for (const metric of ranged) {
      // The query is in whole seconds, as E2B's.
      expect(metric.timestamp.getTime()).toBeGreaterThanOrEqual(Math.round(start.getTime() / 1000) * 1000)
      expect(metric.timestamp.getTime()).toBeLessThanOrEqual(Math.round(end.getTime() / 1000) * 1000)
    }
    const before = await sandbox.getMetrics({
      start: new Date(start.getTime() - 60 * 60_000),
      end: new Date(start.getTime() - 30 * 60_000),
    })
    expect(before).toEqual([])

    await sandbox.pause()
    const atPause = (await Sandbox.getMetrics(sandbox.sandboxId, t.opts)).length
    await new Promise((resolve) => setTimeout(resolve, 3 * INTERVAL_MS))
    expect(await Sandbox.getMetrics(sandbox.sandboxId, t.opts)).toHaveLength(atPause)
    await Sandbox.connect(sandbox.sandboxId, t.opts)
    await waitUntil(async () => (await sandbox.getMetrics()).length > atPause, 20_000)
  })

  it('a killed sandbox has no metrics: SandboxNotFoundError', async () => {
    const sandbox = await create()
    await sandbox.kill()
    await expect(Sandbox.getMetrics(sandbox.sandboxId, t.opts)).rejects.toBeInstanceOf(SandboxNotFoundError)
  })

  it('getInfo and list report the sandbox’s own size (its limits, as its metrics), running and paused', async () => {
    const sandbox = await create()
    const metric = await sampleWhere(sandbox, () => true)
    const expected = {
      cpuCount: availableParallelism(),
      memoryMB: 256,
      diskSizeMB: Math.floor(metric.diskTotal / MiB),
    }
    expect(metric.memTotal / MiB).toBe(expected.memoryMB)
    expect(expected.diskSizeMB).toBeGreaterThan(400)
    expect(expected.diskSizeMB).toBeLessThanOrEqual(512)
    const detail = async () => {
      // The SDK's getInfo drops diskSizeMB; the API's answer has it.
      const response = await fetch(`${t.host.apiUrl}/sandboxes/${sandbox.sandboxId}`, {
        headers: { 'x-api-key': t.host.apiKey },
      })
      const body = (await response.json()) as Record<string, unknown>
      return { cpuCount: body.cpuCount, memoryMB: body.memoryMB, diskSizeMB: body.diskSizeMB }
    }
    const listed = async () => {
      const [entry] = await Sandbox.list({
        ...t.opts,
        query: { metadata: {}, state: ['running', 'paused'] },
      })
        .nextItems()
        .then((items) => items.filter((item) => item.sandboxId === sandbox.sandboxId))
      return { cpuCount: entry?.cpuCount, memoryMB: entry?.memoryMB }
    }
    const info = await sandbox.getInfo()
    expect({ cpuCount: info.cpuCount, memoryMB: info.memoryMB }).toEqual({
      cpuCount: expected.cpuCount,
      memoryMB: expected.memoryMB,
    })
    expect(await detail()).toEqual(expected)
    expect(await listed()).toEqual({ cpuCount: expected.cpuCount, memoryMB: expected.memoryMB })
    await sandbox.pause({ keepMemory: false })
    expect(await detail()).toEqual(expected)
  })
})
