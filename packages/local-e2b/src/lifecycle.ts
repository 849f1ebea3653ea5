// The host side of a sandbox's life: pause and resume (with the registry written and events recorded), the
// timers a sandbox owns (its timeout: auto-pause or kill; its retention once paused), destroy, and the one
// teardown path every end goes through (kill, host restart, host close). The fidelity mechanics of a pause
// or resume themselves are Sandbox.pause/resume (sandbox.ts).
import { startProcess } from './envd-process.js'
import type { HostEventLog } from './events.js'
import type { SandboxRegistry } from './registry.js'
import type { PauseMode, Sandbox, SandboxRecord } from './sandbox.js'

/** setTimeout's longest delay; a longer timer is re-armed when it fires early. */
const MAX_TIMER_MS = 2 ** 31 - 1

export interface LifecycleOptions {
  registry: SandboxRegistry
  events: HostEventLog
  /** A paused sandbox older than this is deleted (none: kept forever). */
  retentionMs: number | undefined
  /** Builds the sandbox (runtime included) of a record read back from the registry. */
  makeSandbox: (record: SandboxRecord) => Sandbox
  /** Gives back what the host holds machine-wide for a sandbox that is gone for good (its host id range). */
  release: (record: SandboxRecord) => void
}

/**
 * Marks a record paused with its memory lost: what a host restart or close leaves of a running sandbox
 * (its processes are gone; its files are kept and the next resume cold boots).
 */
function markMemoryLost(record: SandboxRecord, reason: string): void {
  if (record.state === 'running') {
    const now = Date.now()
    record.pauses.push({ mode: 'filesystem', pausedAt: now, pauseMs: 0, reason })
    record.state = 'paused'
    record.pausedAt = now
  }
  record.memoryLost = true
}

/**
 * The one teardown path: timers, the process table (its streams end with `sandbox <reason>`), the kernels,
 * then the namespace, cgroups and disk mount. Files stay (destroy removes them afterwards).
 * `memoryLost`: the kernels are told the processes stopped (a restart), not that the sandbox was killed.
 */
export async function teardown(sandbox: Sandbox, reason: string, memoryLost = false): Promise<void> {
  sandbox.clearTimers()
  sandbox.forgetProcesses(reason)
  if (memoryLost) sandbox.interpreter?.reset()
  await sandbox.interpreter?.close().catch(() => {})
  await sandbox.runtime.destroy()
}

export class Lifecycle {
  readonly #registry: SandboxRegistry
  readonly #events: HostEventLog
  readonly #options: LifecycleOptions

  constructor(options: LifecycleOptions) {
    this.#options = options
    this.#registry = options.registry
    this.#events = options.events
  }

  /**
   * Loads the registry: every sandbox comes back paused, its memory lost (a new host has no processes). What
   * a host that died without teardown left of them (processes, frozen or not, in their cgroups) is killed, so
   * that each is usable again at once, as its pause mode promises.
   */
  async restore(reason: string): Promise<void> {
    const restored: Sandbox[] = []
    this.#registry.load((record) => {
      markMemoryLost(record, reason)
      // Made by a host before each sandbox had its own id range: its files belong to the one uid of then.
      if (record.idRange === undefined && record.rebaseFrom === undefined) record.rebaseFrom = 'legacy'
      const sandbox = this.#options.makeSandbox(record)
      this.scheduleRetention(sandbox)
      restored.push(sandbox)
      return sandbox
    })
    await Promise.all(restored.map((sandbox) => sandbox.runtime.reclaim()))
  }

  /** Arms the timeout of a running sandbox: at `endAt` it auto-pauses or is killed. */
  scheduleTimeout(sandbox: Sandbox): void {
    if (sandbox.timeoutTimer) clearTimeout(sandbox.timeoutTimer)
    sandbox.timeoutTimer = undefined
    if (sandbox.record.state !== 'running') return
    const delay = Math.max(0, Math.min(sandbox.record.endAt - Date.now(), MAX_TIMER_MS))
    sandbox.timeoutTimer = setTimeout(() => {
      void sandbox
        .serialize(() => this.#onTimeout(sandbox))
        .catch((error: unknown) =>
          this.#events.record('sandbox-timeout-fail', sandbox.id, { error: String(error) }),
        )
    }, delay)
    sandbox.timeoutTimer.unref()
  }

  async #onTimeout(sandbox: Sandbox): Promise<void> {
    if (!this.#registry.holds(sandbox) || sandbox.record.state !== 'running') return
    if (sandbox.record.endAt > Date.now()) return this.scheduleTimeout(sandbox)
    const { autoPause, autoPauseMemory } = sandbox.record
    this.#events.record('sandbox-timeout', sandbox.id, { action: autoPause ? 'pause' : 'kill' })
    if (!autoPause) return this.destroy(sandbox, 'timeout')
    const mode: PauseMode =
      autoPauseMemory || sandbox.pauseMode !== 'memory' ? sandbox.pauseMode : 'filesystem'
    await this.pause(sandbox, mode, 'timeout')
  }

  /** Arms the retention of a paused sandbox (when the host has one): past it, the sandbox is deleted. */
  scheduleRetention(sandbox: Sandbox): void {
    if (sandbox.retentionTimer) clearTimeout(sandbox.retentionTimer)
    sandbox.retentionTimer = undefined
    const { retentionMs } = this.#options
    if (retentionMs === undefined || sandbox.record.state !== 'paused') return
    const pausedAt = sandbox.record.pausedAt ?? Date.now()
    const delay = Math.max(0, pausedAt + retentionMs - Date.now())
    sandbox.retentionTimer = setTimeout(
      () => {
        void sandbox.serialize(async () => {
          if (!this.#registry.holds(sandbox) || sandbox.record.state !== 'paused') return
          if (sandbox.record.pausedAt !== pausedAt) return
          await this.destroy(sandbox, 'retention')
          this.#events.record('sandbox-expire', sandbox.id, { retentionMs, reason: 'retention' })
        })
      },
      Math.min(delay, MAX_TIMER_MS),
    )
    sandbox.retentionTimer.unref()
  }

  /** Moves a running sandbox's end to `endAt` and re-arms its timeout. */
  setEndAt(sandbox: Sandbox, endAt: number): void {
    sandbox.record.endAt = endAt
    this.#registry.save()
    this.scheduleTimeout(sandbox)
  }

  /** Pauses with `mode`. Caller holds the sandbox's lock and checked that it runs. */
  async pause(sandbox: Sandbox, mode: PauseMode, reason: string): Promise<void> {
    if (sandbox.timeoutTimer) clearTimeout(sandbox.timeoutTimer)
    const pause = await sandbox.pause(mode, reason)
    this.#registry.save()
    this.scheduleRetention(sandbox)
    this.#events.record('sandbox-pause', sandbox.id, { mode, pauseMs: pause.pauseMs, reason })
  }

  /** Resumes a paused sandbox (cold boot when `memory` is false or was lost); it then runs `timeoutMs`. */
  async resume(sandbox: Sandbox, memory: boolean, timeoutMs: number, reason: string): Promise<void> {
    if (sandbox.retentionTimer) clearTimeout(sandbox.retentionTimer)
    sandbox.retentionTimer = undefined
    const result = await sandbox.resume({
      memory,
      restartProcesses: async (config, tag) => {
        const entry = await startProcess(sandbox, this.#events, {
          config,
          stdin: false,
          timeoutMs: 0,
          ...(tag ? { tag } : {}),
        })
        this.#events.record('process-restart', sandbox.id, {
          pid: entry.pid,
          cmd: config.cmd,
          args: config.args,
        })
      },
    })
    if (result.coldBoot) sandbox.interpreter?.reset()
    this.setEndAt(sandbox, Date.now() + timeoutMs)
    this.#events.record('sandbox-resume', sandbox.id, {
      resumeMs: result.resumeMs,
      coldBoot: result.coldBoot,
      reason,
    })
  }

  /** Kills a sandbox: out of the registry, torn down, its files and disk deleted. */
  async destroy(sandbox: Sandbox, reason: string): Promise<void> {
    this.#registry.delete(sandbox)
    this.#registry.save()
    // Out of the registry first, so that the health check the SDK makes on the dropped connection finds
    // the sandbox gone.
    sandbox.dropConnections()
    await teardown(sandbox, 'was killed')
    sandbox.runtime.removeStorage()
    this.release(sandbox.record)
    this.#events.record('sandbox-kill', sandbox.id, { reason })
  }

  /** Gives back what the host holds machine-wide for a sandbox that is gone for good. */
  release(record: SandboxRecord): void {
    this.#options.release(record)
  }

  /** Tears every sandbox down and loads the registry again (the restart fault): processes die, files stay. */
  async restartAll(reason: string): Promise<void> {
    for (const sandbox of this.#registry.values()) await teardown(sandbox, 'restarted', true)
    this.#registry.clear()
    await this.restore(reason)
  }

  /** The host closes: every sandbox torn down and recorded paused with its memory lost. */
  async closeAll(): Promise<void> {
    for (const sandbox of this.#registry.values()) {
      await teardown(sandbox, 'host closed').catch(() => {})
      markMemoryLost(sandbox.record, 'host-close')
    }
  }
}
