// Request-level fault rules: fail the next N calls of an operation, or delay them. The sandbox-level faults
// (expire, drop memory, kill a process, restart, change id) live on the host because they act on state.

/** Operations a fault rule can target. */
export type FaultOperation = 'create' | 'connect' | 'pause' | 'kill' | 'setTimeout' | 'envd' | 'execute'

export const FAULT_OPERATIONS: readonly FaultOperation[] = [
  'create',
  'connect',
  'pause',
  'kill',
  'setTimeout',
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
