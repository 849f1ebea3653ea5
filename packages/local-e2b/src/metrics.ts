// Sandbox metrics as E2B serves them (`GET /sandboxes/{id}/metrics?start&end`): CPU, memory and disk of each
// running sandbox, sampled every 5 s by default (E2B's collection interval) from its cgroups and its disk,
// each sample stamped with its interval's boundary as E2B's are. A sandbox keeps its latest samples in a
// fixed ring (720: an hour at 5 s), so a long-lived sandbox costs no more memory than a young one. A paused
// sandbox is not sampled (its VM does not run on E2B either). Samples live in memory: a host restart starts
// every sandbox's series anew.
import { readFileSync, statfsSync, statSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { availableParallelism, totalmem } from 'node:os'
import { join } from 'node:path'
import type { HostEvent, HostEventLog } from './events.js'
import { HttpError, sendJson } from './http.js'
import type { SandboxRegistry } from './registry.js'
import { diskImageOf, isMountPoint } from './runtime/disk-image.js'
import { processCpuTicks } from './runtime/freezer.js'
import type { Sandbox } from './sandbox.js'

/** E2B's collection interval (ms). */
export const DEFAULT_METRICS_INTERVAL_MS = 5000
/** Samples kept per sandbox. */
export const METRIC_SAMPLES_KEPT = 720

/** One sample, E2B's `SandboxMetric` fields. */
export interface MetricSample {
  /** Epoch ms, on an interval boundary. */
  timestamp: number
  /** CPUs the sandbox may use (no CPU cap here: the machine's). */
  cpuCount: number
  /** CPU used over the last interval, in percent of `cpuCount` CPUs. */
  cpuUsedPct: number
  /** Memory used, page cache excluded (bytes). */
  memUsed: number
  /** The sandbox's memory limit (bytes). */
  memTotal: number
  /** Page cache charged to the sandbox (bytes). */
  memCache: number
  /** Used bytes of the disk holding /home/user and /tmp. */
  diskUsed: number
  /** Size of that disk (bytes). */
  diskTotal: number
}

const FIELDS = [
  'timestamp',
  'cpuCount',
  'cpuUsedPct',
  'memUsed',
  'memTotal',
  'memCache',
  'diskUsed',
  'diskTotal',
] as const satisfies readonly (keyof MetricSample)[]

/** A fixed-size ring of samples, oldest overwritten first. */
export class MetricSeries {
  readonly #values: Float64Array
  readonly #capacity: number
  #next = 0
  #size = 0

  constructor(capacity = METRIC_SAMPLES_KEPT) {
    this.#capacity = capacity
    this.#values = new Float64Array(capacity * FIELDS.length)
  }

  get size(): number {
    return this.#size
  }

  push(sample: MetricSample): void {
    const offset = this.#next * FIELDS.length
    FIELDS.forEach((field, index) => {
      this.#values[offset + index] = sample[field]
    })
    this.#next = (this.#next + 1) % this.#capacity
    this.#size = Math.min(this.#size + 1, this.#capacity)
  }

  /** The samples with `startMs <= timestamp <= endMs`, oldest first. */
  between(startMs: number, endMs: number): MetricSample[] {
    const samples: MetricSample[] = []
    const first = (this.#next - this.#size + this.#capacity) % this.#capacity
    for (let index = 0; index < this.#size; index++) {
      const offset = ((first + index) % this.#capacity) * FIELDS.length
      const timestamp = this.#values[offset] ?? 0
      if (timestamp < startMs || timestamp > endMs) continue
      const sample = {} as MetricSample
      FIELDS.forEach((field, fieldIndex) => {
        sample[field] = this.#values[offset + fieldIndex] ?? 0
      })
      samples.push(sample)
    }
    return samples
  }
}

function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

/** A `key value` line of a cgroup stat file. */
function statField(text: string | undefined, key: string): number | undefined {
  const match = text === undefined ? null : new RegExp(`^${key} (\\d+)$`, 'm').exec(text)
  return match ? Number(match[1]) : undefined
}

/** CPU time the sandbox's cgroup has used (µs): cgroup v2 `cpu.stat`, v1 `cpuacct.usage`, else its processes. */
function cpuUsageMicros(sandbox: Sandbox): number {
  for (const dir of sandbox.runtime.cgroupDirs) {
    const usage = statField(readOptional(join(dir, 'cpu.stat')), 'usage_usec')
    if (usage !== undefined) return usage
    const nanoseconds = readOptional(join(dir, 'cpuacct.usage'))
    if (nanoseconds !== undefined) return Number(nanoseconds) / 1000
  }
  // Without a cgroup: the live processes' utime + stime, in clock ticks of 10 ms (USER_HZ on Linux).
  return sandbox.runtime.hostPids().reduce((sum, pid) => sum + processCpuTicks(pid), 0) * 10_000
}

/** Memory of the sandbox's cgroup: v2 `memory.current`/`memory.max`, v1 `memory.usage_in_bytes`/limit. */
function memoryUsage(sandbox: Sandbox): { used: number; total: number; cache: number } {
  const machine = totalmem()
  const limitOf = (raw: string | undefined) => {
    const value = Number(raw?.trim())
    return Number.isFinite(value) && value > 0 && value < machine ? value : machine
  }
  for (const dir of sandbox.runtime.cgroupDirs) {
    const current = readOptional(join(dir, 'memory.current'))
    if (current !== undefined) {
      const cache = statField(readOptional(join(dir, 'memory.stat')), 'file') ?? 0
      return {
        used: Math.max(0, Number(current) - cache),
        total: limitOf(readOptional(join(dir, 'memory.max'))),
        cache,
      }
    }
    const usage = readOptional(join(dir, 'memory.usage_in_bytes'))
    if (usage !== undefined) {
      const stat = readOptional(join(dir, 'memory.stat'))
      const cache = statField(stat, 'total_cache') ?? statField(stat, 'cache') ?? 0
      return {
        used: Math.max(0, Number(usage) - cache),
        total: limitOf(readOptional(join(dir, 'memory.limit_in_bytes'))),
        cache,
      }
    }
  }
  // Without a memory cgroup: the resident pages of the live processes.
  const pageSize = 4096
  let used = 0
  for (const pid of sandbox.runtime.hostPids()) {
    const resident = Number(readOptional(`/proc/${pid}/statm`)?.split(' ')[1])
    if (Number.isFinite(resident)) used += resident * pageSize
  }
  return { used, total: machine, cache: 0 }
}

/** The disk holding the sandbox's home and /tmp: its image when mounted, else the host filesystem under it. */
function diskUsage(sandbox: Sandbox): { used: number; total: number } {
  try {
    const stats = statfsSync(sandbox.record.rootDir)
    return { used: (stats.blocks - stats.bfree) * stats.bsize, total: stats.blocks * stats.bsize }
  } catch {
    return { used: 0, total: 0 }
  }
}

/** What a sandbox is sized to, as `GET /sandboxes/{id}` and the list report it (E2B's units: MiB). */
export interface SandboxSize {
  /** CPUs the sandbox can use: the machine's (it has a weight, not a cap). */
  cpuCount: number
  /** Its memory cap, else the machine's memory. */
  memoryMB: number
  /** The size of its disk (home and /tmp). */
  diskSizeMB: number
}

const MIB = 1024 * 1024

/**
 * The sandbox's size, from the same sources as its metrics' `cpuCount`, `memTotal` and `diskTotal`, also
 * while it is paused: its memory cap (the cgroup's, when a boot has set it, else the limit the next boot sets),
 * its disk (the mounted image's filesystem, else the image's own size, else the host filesystem under it).
 */
export function sandboxSize(sandbox: Sandbox): SandboxSize {
  const machine = totalmem()
  const limit = sandbox.runtime.memoryLimitBytes
  const memory = sandbox.runtime.cgroupDirs.length > 0 ? memoryUsage(sandbox).total : (limit ?? machine)
  const { rootDir } = sandbox.record
  let disk = diskUsage(sandbox).total
  if (!isMountPoint(rootDir)) {
    try {
      disk = statSync(diskImageOf(rootDir)).size
    } catch {}
  }
  return {
    cpuCount: availableParallelism(),
    memoryMB: Math.floor(memory / MIB),
    diskSizeMB: Math.floor(disk / MIB),
  }
}

/** Parses `start`/`end` (Unix seconds) of a metrics query; 400 for anything but non-negative integers. */
function secondsParam(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name)
  if (raw === null || raw === '') return undefined
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0)
    throw new HttpError(400, `${name} must be a Unix time in seconds`)
  return value
}

export interface SandboxMetricsOptions {
  registry: SandboxRegistry
  events: HostEventLog
  /** Time between samples (ms). */
  intervalMs: number
  /** Samples kept per sandbox (default {@link METRIC_SAMPLES_KEPT}). */
  capacity?: number
}

export class SandboxMetrics {
  readonly #options: SandboxMetricsOptions
  readonly #series = new Map<Sandbox, MetricSeries>()
  /** The CPU reading each sandbox's next sample is measured from. */
  readonly #cpuBase = new Map<Sandbox, { micros: number; at: number }>()
  readonly #cpuCount = availableParallelism()
  #timer: NodeJS.Timeout | undefined
  readonly #onStart = (event: HostEvent) => {
    const sandbox = event.sandboxId === undefined ? undefined : this.#options.registry.get(event.sandboxId)
    if (sandbox) this.#cpuBase.set(sandbox, { micros: cpuUsageMicros(sandbox), at: performance.now() })
  }

  constructor(options: SandboxMetricsOptions) {
    this.#options = options
  }

  /** Starts sampling on the interval's boundaries. */
  start(): void {
    // The first CPU figure of a sandbox covers the time since it started or resumed, not since boot.
    this.#options.events.on('sandbox-create', this.#onStart)
    this.#options.events.on('sandbox-resume', this.#onStart)
    this.#schedule()
  }

  /** Stops sampling (host close). */
  stop(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#options.events.off('sandbox-create', this.#onStart)
    this.#options.events.off('sandbox-resume', this.#onStart)
  }

  #schedule(): void {
    const { intervalMs } = this.#options
    const delay = intervalMs - (Date.now() % intervalMs)
    this.#timer = setTimeout(() => {
      this.sample(Math.round(Date.now() / intervalMs) * intervalMs)
      this.#schedule()
    }, delay)
    this.#timer.unref()
  }

  /** Takes one sample of every running sandbox, stamped `timestamp`; forgets sandboxes no longer held. */
  sample(timestamp: number): void {
    const { registry, capacity } = this.#options
    for (const sandbox of [...this.#series.keys(), ...this.#cpuBase.keys()]) {
      if (!registry.holds(sandbox)) {
        this.#series.delete(sandbox)
        this.#cpuBase.delete(sandbox)
      }
    }
    for (const sandbox of registry.values()) {
      if (sandbox.record.state !== 'running') {
        this.#cpuBase.delete(sandbox)
        continue
      }
      const now = performance.now()
      const micros = cpuUsageMicros(sandbox)
      const base = this.#cpuBase.get(sandbox)
      this.#cpuBase.set(sandbox, { micros, at: now })
      // A sandbox first seen now (a host restarted under it) has no figure yet: its next sample has one.
      if (!base) continue
      const elapsedMicros = (now - base.at) * 1000
      const share = elapsedMicros > 0 ? (micros - base.micros) / (elapsedMicros * this.#cpuCount) : 0
      const memory = memoryUsage(sandbox)
      const disk = diskUsage(sandbox)
      let series = this.#series.get(sandbox)
      if (!series) {
        series = new MetricSeries(capacity)
        this.#series.set(sandbox, series)
      }
      series.push({
        timestamp,
        cpuCount: this.#cpuCount,
        cpuUsedPct: Math.round(Math.min(1, Math.max(0, share)) * 10_000) / 100,
        memUsed: memory.used,
        memTotal: memory.total,
        memCache: memory.cache,
        diskUsed: disk.used,
        diskTotal: disk.total,
      })
    }
  }

  /** `GET /sandboxes/{id}/metrics?start&end`: the sandbox's samples in that range (Unix seconds). */
  answer(sandbox: Sandbox, url: URL, response: ServerResponse): void {
    const start = secondsParam(url.searchParams, 'start')
    const end = secondsParam(url.searchParams, 'end')
    if (start !== undefined && end !== undefined && start > end)
      throw new HttpError(400, 'start must not be after end')
    const samples =
      this.#series
        .get(sandbox)
        ?.between(start === undefined ? 0 : start * 1000, end === undefined ? Infinity : end * 1000) ?? []
    sendJson(
      response,
      200,
      samples.map((sample) => ({
        timestamp: new Date(sample.timestamp).toISOString(),
        timestampUnix: Math.floor(sample.timestamp / 1000),
        cpuCount: sample.cpuCount,
        cpuUsedPct: sample.cpuUsedPct,
        memUsed: sample.memUsed,
        memTotal: sample.memTotal,
        memCache: sample.memCache,
        diskUsed: sample.diskUsed,
        diskTotal: sample.diskTotal,
      })),
    )
  }
}
