import type { CodeLanguage } from '../contract/journal.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'

/** Fields every health check shares. */
export interface HealthCheckBase {
  /** Name shown in reports; unique within a manager's checks. */
  name: string
  /** Time allowed for the probe (and again for its repair), ms. Default 10 000. */
  timeoutMs?: number
  /** When true, a probe that still fails after its repair fails the turn with HEALTH_CHECK_FAILED. Default false. */
  required?: boolean
}

/** A process whose command line contains `command` must be running; repair: start `command` again. */
export interface ProcessHealthCheck extends HealthCheckBase {
  kind: 'process'
  /** The command to look for (substring of the process command line) and to start on repair. */
  command: string
  /** Working directory for the repair. */
  cwd?: string
  /** Environment for the repair. */
  envs?: Record<string, string>
}

/** A port answers inside the sandbox (TCP connect, or an HTTP GET of `path` with a status below 500). */
export interface PortHealthCheck extends HealthCheckBase {
  kind: 'port'
  /** Port on the sandbox's loopback. */
  port: number
  /** HTTP path to GET; when absent only a TCP connect is tried. */
  path?: string
  /** What to run when it does not answer (for example a `processCheck`'s command); default nothing. */
  repair?: HealthRepair
}

/** Code that must evaluate truthy (its last expression), e.g. a database connection's ping. */
export interface CodeHealthCheck extends HealthCheckBase {
  kind: 'code'
  /** The probe code; passes when it raises nothing and its last expression is truthy. */
  code: string
  /** Default `'python'`. */
  language?: CodeLanguage
  /** Repair, e.g. code that reconnects. */
  repair?: HealthRepair
}

/** A file must exist. */
export interface FileHealthCheck extends HealthCheckBase {
  kind: 'file'
  /** Absolute path inside the sandbox. */
  path: string
  /** Repair, e.g. a command that regenerates the file. */
  repair?: HealthRepair
}

/** A probe written as a function. */
export interface CustomHealthCheck extends HealthCheckBase {
  kind: 'custom'
  /** Returns true (or a passing result) when healthy; throwing counts as failing. */
  run: (context: HealthCheckContext) => Promise<boolean | { ok: boolean; message?: string }>
  /** Repair function. */
  repair?: (context: HealthCheckContext) => Promise<void>
}

/** A repair: a shell command, code, or a function. */
export type HealthRepair =
  | { command: string; cwd?: string; background?: boolean }
  | { code: string; language?: CodeLanguage }
  | ((context: HealthCheckContext) => Promise<void>)

/** Any declared health check. */
export type HealthCheck =
  | ProcessHealthCheck
  | PortHealthCheck
  | CodeHealthCheck
  | FileHealthCheck
  | CustomHealthCheck

/** What a probe gets. */
export interface HealthCheckContext {
  /** The resumed sandbox. */
  sandbox: SandboxHandle
  /** Fires when the probe's time is up or the turn is aborted. */
  signal: AbortSignal
}

/** How a probe ended. */
export type HealthCheckStatus = 'passed' | 'repaired' | 'failed' | 'skipped'

/** The outcome of one probe, as found in `turn.report.checks`. */
export interface HealthCheckResult {
  /** Check name; built-in fidelity probes are named `memory`, `filesystem` and `processes`. */
  name: string
  /** Check kind; built-in probes use `'memory' | 'filesystem' | 'processes'`. */
  kind: HealthCheck['kind'] | 'memory' | 'filesystem' | 'processes'
  /** How it ended: passed at once, repaired, failed after repair, or skipped (nothing to compare with). */
  status: HealthCheckStatus
  /** Whether it is required. */
  required: boolean
  /** Time of the probe, ms. */
  probeMs: number
  /** Time of the repair and re-probe, ms; absent when no repair ran. */
  repairMs?: number
  /** Human-readable detail (what was missing, what was restarted). */
  message?: string
}

function base<T extends HealthCheckBase>(kind: string, options: T): void {
  if (typeof options !== 'object' || options === null || typeof options.name !== 'string' || !options.name) {
    throw new TypeError(`${kind}Check needs a non-empty name`)
  }
}

/** A process matching `command` must be running; repair starts it again. */
export function processCheck(options: Omit<ProcessHealthCheck, 'kind'>): ProcessHealthCheck {
  base('process', options)
  return { ...options, kind: 'process' }
}

/** A port (or an HTTP path on it) must answer from inside the sandbox. */
export function portCheck(options: Omit<PortHealthCheck, 'kind'>): PortHealthCheck {
  base('port', options)
  return { ...options, kind: 'port' }
}

/** Code must evaluate truthy; repair runs code (or a command) to fix it. */
export function codeCheck(options: Omit<CodeHealthCheck, 'kind'>): CodeHealthCheck {
  base('code', options)
  return { ...options, kind: 'code' }
}

/** A file must exist. */
export function fileCheck(options: Omit<FileHealthCheck, 'kind'>): FileHealthCheck {
  base('file', options)
  return { ...options, kind: 'file' }
}

/** A probe written as a function. */
export function customCheck(options: Omit<CustomHealthCheck, 'kind'>): CustomHealthCheck {
  base('custom', options)
  return { ...options, kind: 'custom' }
}
