// Fault injection: request-level rules (fail the next N calls of an operation, or delay them) applied by the
// routers, and the sandbox-level faults (expire, drop memory, kill a process, restart, change id) that act
// on the host's state through the registry and the lifecycle.
import type { ServerResponse } from 'node:http'
import { invalidArgument, LocalE2BError, LocalE2BErrorCode } from './errors.js'
import type { HostEventLog } from './events.js'
import { HttpError, sendJson } from './http.js'
import type { Lifecycle } from './lifecycle.js'
import { newSandboxId, type SandboxRegistry } from './registry.js'
import type { Sandbox } from './sandbox.js'

/** Operations a fault rule can target. */
export type FaultOperation =
  | 'create'
  | 'connect'
  | 'pause'
  | 'kill'
  | 'setTimeout'
  | 'snapshot'
  | 'envd'
  | 'execute'

export const FAULT_OPERATIONS: readonly FaultOperation[] = [
  'create',
  'connect',
  'pause',
  'kill',
  'setTimeout',
  'snapshot',
  'envd',
  'execute',
]

/** Options of `faults.failNext`. */
export interface FailNextOptions {
  /** How many calls fail (default 1). */
  count?: number
  /** HTTP status returned (default 500). */
  status?: number
  /** JSON body returned (default `{ code: status, message: 'injected fault' }`). */
  body?: unknown
  /** Only calls about this sandbox (default any). */
  sandboxId?: string
  /** Extra response headers, e.g. `{ 'retry-after': '1' }` for a 429. */
  headers?: Record<string, string>
}

/** Options of `faults.addLatency`. */
export interface LatencyOptions {
  /** How many calls are delayed (default: every call until cleared). */
  count?: number
  /** Only calls about this sandbox (default any). */
  sandboxId?: string
}

interface FailRule {
  kind: 'fail'
  operation: FaultOperation
  remaining: number
  status: number
  body: unknown
  sandboxId?: string
  headers: Record<string, string>
}

interface LatencyRule {
  kind: 'latency'
  operation: FaultOperation
  remaining: number
  ms: number
  sandboxId?: string
}

/** What the router must do for one call. */
export interface FaultDecision {
  /** Wait this long first (ms). */
  delayMs: number
  /** Answer with this instead of serving the call. */
  failure?: { status: number; body: unknown; headers: Record<string, string> }
}

export function isFaultOperation(value: unknown): value is FaultOperation {
  return typeof value === 'string' && (FAULT_OPERATIONS as readonly string[]).includes(value)
}

export class FaultRules {
  #rules: Array<FailRule | LatencyRule> = []

  addFailure(operation: FaultOperation, options: FailNextOptions = {}): void {
    const status = options.status ?? 500
    const rule: FailRule = {
      kind: 'fail',
      operation,
      remaining: options.count ?? 1,
      status,
      body: options.body ?? { code: status, message: `injected fault on ${operation}` },
      headers: options.headers ?? {},
    }
    if (options.sandboxId !== undefined) rule.sandboxId = options.sandboxId
    this.#rules.push(rule)
  }

  addLatency(operation: FaultOperation, ms: number, options: LatencyOptions = {}): void {
    const rule: LatencyRule = {
      kind: 'latency',
      operation,
      remaining: options.count ?? Number.POSITIVE_INFINITY,
      ms,
    }
    if (options.sandboxId !== undefined) rule.sandboxId = options.sandboxId
    this.#rules.push(rule)
  }

  clear(): void {
    this.#rules = []
  }

  /** Pending rules (for the admin route and tests). */
  list(): Array<Record<string, unknown>> {
    return this.#rules.map((rule) => ({
      ...rule,
      remaining: Number.isFinite(rule.remaining) ? rule.remaining : null,
    }))
  }

  /** Consumes the rules that apply to this call. */
  take(operation: FaultOperation, sandboxId: string | undefined): FaultDecision {
    const decision: FaultDecision = { delayMs: 0 }
    for (const rule of this.#rules) {
      if (rule.operation !== operation || rule.remaining <= 0) continue
      if (rule.sandboxId !== undefined && rule.sandboxId !== sandboxId) continue
      if (rule.kind === 'latency') {
        decision.delayMs += rule.ms
        rule.remaining--
      } else if (!decision.failure) {
        decision.failure = { status: rule.status, body: rule.body, headers: rule.headers }
        rule.remaining--
      }
    }
    this.#rules = this.#rules.filter((rule) => rule.remaining > 0)
    return decision
  }
}

/** Sandbox-level faults and request-level fault rules (also reachable under `/_local/`). */
export interface LocalE2BFaults {
  /** The next `count` calls of `operation` answer `status` with `body` instead of being served. */
  failNext(operation: FaultOperation, options?: FailNextOptions): void
  /** Delays calls of `operation` by `ms` (every call until `clear()`, or `count` calls). */
  addLatency(operation: FaultOperation, ms: number, options?: LatencyOptions): void
  /** Removes every pending fail/latency rule. */
  clear(): void
  /** Pending fail/latency rules. */
  list(): Array<Record<string, unknown>>
  /** A paused sandbox passes its retention now: it is deleted, connect gets 404. */
  expire(sandboxId: string): Promise<void>
  /** Kills every process and kernel of the sandbox, keeps its files (it stays in its state). */
  dropMemory(sandboxId: string): Promise<void>
  /** Kills one envd-started process (the given pid, or the oldest one); resolves with the killed pid. */
  killProcess(sandboxId: string, pid?: number): Promise<number>
  /** Restarts the host on the same stateDir and port: processes die, sandboxes come back paused. */
  restart(): Promise<void>
  /** The next connect of `sandboxId` answers with a new id (the same sandbox); the old id then 404s. */
  changeIdOnNextConnect(sandboxId: string, newId?: string): void
}

export interface HostFaultsOptions {
  events: HostEventLog
  registry: SandboxRegistry
  lifecycle: Lifecycle
  /** Drops every open connection of the server (the restart fault). */
  dropConnections: () => void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const invalidFault = invalidArgument

/** The host's faults: what `host.faults` exposes, plus what the routers call to apply them. */
export class HostFaults implements LocalE2BFaults {
  readonly #rules = new FaultRules()
  /** Sandboxes whose next connect changes their id (to the given one, or a new one when undefined). */
  readonly #idChanges = new Map<string, string | undefined>()
  readonly #options: HostFaultsOptions
  readonly #events: HostEventLog

  constructor(options: HostFaultsOptions) {
    this.#options = options
    this.#events = options.events
  }

  /** Applies the fail/latency rules to one call; true when a fault answered it. */
  async apply(
    operation: FaultOperation,
    sandboxId: string | undefined,
    response: ServerResponse,
  ): Promise<boolean> {
    const decision = this.#rules.take(operation, sandboxId)
    if (decision.delayMs > 0) {
      this.#events.record('fault-trigger', sandboxId, { fault: 'latency', operation, ms: decision.delayMs })
      await sleep(decision.delayMs)
    }
    if (!decision.failure) return false
    const { status, body, headers } = decision.failure
    this.#events.record('fault-trigger', sandboxId, { fault: 'fail', operation, status })
    sendJson(response, status, body, headers)
    return true
  }

  /** Applies a pending change-id fault to a sandbox being connected; returns the sandbox (same object). */
  applyIdChange(sandbox: Sandbox): Sandbox {
    if (!this.#idChanges.has(sandbox.id)) return sandbox
    const newId = this.#idChanges.get(sandbox.id) ?? newSandboxId()
    this.#idChanges.delete(sandbox.id)
    const oldId = sandbox.id
    this.#options.registry.rename(sandbox, newId)
    this.#options.registry.save()
    this.#events.record('fault-trigger', oldId, {
      fault: 'change-id',
      operation: 'connect',
      newSandboxId: newId,
    })
    return sandbox
  }

  failNext(operation: FaultOperation, options: FailNextOptions = {}): void {
    if (!isFaultOperation(operation)) throw invalidFault(`unknown fault operation ${String(operation)}`)
    this.#rules.addFailure(operation, options)
    this.#events.record('fault-inject', options.sandboxId, {
      fault: 'fail',
      operation,
      count: options.count ?? 1,
      status: options.status ?? 500,
    })
  }

  addLatency(operation: FaultOperation, ms: number, options: LatencyOptions = {}): void {
    if (!isFaultOperation(operation)) throw invalidFault(`unknown fault operation ${String(operation)}`)
    this.#rules.addLatency(operation, ms, options)
    this.#events.record('fault-inject', options.sandboxId, {
      fault: 'latency',
      operation,
      ms,
      count: options.count ?? null,
    })
  }

  clear(): void {
    this.#rules.clear()
    this.#events.record('fault-clear', undefined, {})
  }

  list(): Array<Record<string, unknown>> {
    return this.#rules.list()
  }

  #target(sandboxId: string): Sandbox {
    const sandbox = this.#options.registry.get(sandboxId)
    if (!sandbox) {
      throw new LocalE2BError({
        code: LocalE2BErrorCode.NOT_FOUND,
        message: `sandbox ${sandboxId} is not on this host`,
        sandboxId,
      })
    }
    return sandbox
  }

  async expire(sandboxId: string): Promise<void> {
    const sandbox = this.#target(sandboxId)
    this.#events.record('fault-inject', sandboxId, { fault: 'expire' })
    await sandbox.serialize(async () => {
      if (sandbox.record.state !== 'paused') {
        throw invalidFault(`sandbox ${sandboxId} is not paused; only a paused sandbox can expire`)
      }
      await this.#options.lifecycle.destroy(sandbox, 'expired')
      this.#events.record('sandbox-expire', sandboxId, { reason: 'fault' })
    })
  }

  async dropMemory(sandboxId: string): Promise<void> {
    const sandbox = this.#target(sandboxId)
    this.#events.record('fault-inject', sandboxId, { fault: 'drop-memory' })
    await sandbox.serialize(async () => {
      const killed = [...sandbox.processes.keys()]
      await sandbox.stopProcesses('lost its memory')
      if (sandbox.record.state === 'paused') sandbox.record.memoryLost = true
      this.#options.registry.save()
      this.#events.record('fault-trigger', sandboxId, { fault: 'drop-memory', killedPids: killed })
    })
  }

  async killProcess(sandboxId: string, pid?: number): Promise<number> {
    const sandbox = this.#target(sandboxId)
    const entry =
      pid === undefined
        ? [...sandbox.processes.values()]
            .filter((candidate) => !candidate.ended)
            .sort((a, b) => a.startedAt - b.startedAt)[0]
        : sandbox.processes.get(pid)
    if (!entry) throw new HttpError(404, `no process ${pid ?? ''} in sandbox ${sandboxId}`.replace('  ', ' '))
    this.#events.record('fault-inject', sandboxId, { fault: 'kill-process', pid: entry.pid })
    const exited = new Promise((resolve) => entry.spawned.child.once('exit', resolve))
    entry.spawned.child.kill('SIGKILL')
    if (sandbox.runtime.frozen) {
      // A frozen process dies when thawed; the sandbox stays paused, so the kill is recorded as pending.
      this.#events.record('fault-trigger', sandboxId, {
        fault: 'kill-process',
        pid: entry.pid,
        pending: true,
      })
      return entry.pid
    }
    await exited
    this.#events.record('fault-trigger', sandboxId, { fault: 'kill-process', pid: entry.pid })
    return entry.pid
  }

  async restart(): Promise<void> {
    this.#events.record('fault-inject', undefined, { fault: 'restart' })
    const started = performance.now()
    this.#options.dropConnections()
    // A restarted host is gone for a moment: its peers see their connections closed before it answers again.
    // Two turns of the event loop (each with its I/O poll) let a client in this process read the close, so
    // its next request opens a new connection instead of writing to a dropped one (EPIPE), whatever the
    // machine's speed; a restart whose teardown never waits on I/O gave the client no such turn.
    await nextLoopTurn()
    await nextLoopTurn()
    await this.#options.lifecycle.restartAll('host-restart')
    this.#idChanges.clear()
    this.#events.record('host-restart', undefined, {
      restartMs: performance.now() - started,
      sandboxes: this.#options.registry.size,
    })
  }

  changeIdOnNextConnect(sandboxId: string, newId?: string): void {
    this.#target(sandboxId)
    if (newId !== undefined && (!/^[A-Za-z0-9_-]{1,64}$/.test(newId) || this.#options.registry.has(newId))) {
      throw invalidFault('newId must be a free id of 1-64 letters, digits, - or _')
    }
    this.#idChanges.set(sandboxId, newId)
    this.#events.record('fault-inject', sandboxId, {
      fault: 'change-id',
      ...(newId ? { newSandboxId: newId } : {}),
    })
  }
}

/** Resolves after the event loop's next check phase, so one I/O poll has run in between. */
function nextLoopTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
