import { SandkeepError } from '../contract/errors.js'
import type {
  HealthCheck,
  HealthCheckContext,
  HealthCheckResult,
  HealthRepair,
  PortHealthCheck,
} from '../contract/health.js'
import { sleep } from '../contract/retry.js'
import type { ProcessInfo, SandboxHandle } from '../contract/sandbox-provider.js'
import { shellQuote } from '../contract/shell.js'
import type { AssessmentScope } from './scope.js'

/** Default time allowed for one probe (and again for its repair), ms. */
const DEFAULT_CHECK_TIMEOUT_MS = 10_000

/** How long a port probe waits for a just-restarted process to listen before its repair runs, ms. */
const PORT_START_GRACE_MS = 3_000

type ProbeOutcome = { ok: boolean; message?: string }

/** What the first probe of a declared check found, made ahead of the run (see {@link probeDeclaredChecks}). */
export type FirstProbes = ReadonlyMap<HealthCheck, { outcome: ProbeOutcome; probeMs: number }>

/** One run of the declared checks. */
export interface DeclaredCheckRun extends AssessmentScope {
  /** The sandbox repairs and custom checks use (the scope's). */
  sandbox: SandboxHandle
  /** The sandbox the built-in probes (process, port, code, file) use, which only read; default `sandbox`. */
  probeSandbox?: SandboxHandle
  /** A process list read a moment ago (by the fidelity probe): the process checks' first probe. */
  processList?: ProcessInfo[]
  /** The platform restarted processes on resume (new pids): they may not listen yet. */
  processesRestarted?: boolean
  /**
   * First probes made side by side with the fidelity probes: used instead of probing again, unless a process
   * was (re)started since (by the platform or a repair here), which makes them stale.
   */
  firstProbes?: FirstProbes
}

/**
 * Runs declared checks, each probe and each repair bounded by the check's `timeoutMs`. Process checks run
 * first (in parallel), then every other check (in parallel): ports, code and files usually depend on a
 * process, so they are probed once processes were repaired; after such a repair a port probe waits for the
 * port to open (polling within its timeout) instead of failing at once; when only the platform restarted
 * processes on resume, that wait ends as soon as none of them runs any more. Results keep the declared order.
 * A failing probe runs its repair, then probes again until it passes or its time is up.
 */
export async function runDeclaredChecks(
  checks: readonly HealthCheck[],
  run: DeclaredCheckRun,
): Promise<HealthCheckResult[]> {
  const { sandbox, probeSandbox = sandbox, signal, processList, processesRestarted = false } = run
  const handles = { sandbox, probeSandbox }
  const results = new Map<HealthCheck, HealthCheckResult>()
  const processes = checks.filter((c) => c.kind === 'process')
  const others = checks.filter((c) => c.kind !== 'process')
  // The first probe of process checks reuses a list read a moment ago by the built-in probe.
  const listed = processList
  await Promise.all(
    processes.map(async (c) =>
      results.set(
        c,
        await runCheck(handles, c, signal, { processList: listed, first: run.firstProbes?.get(c) }),
      ),
    ),
  )
  // Processes just (re)started, by a repair here or by the platform on resume, may not listen yet.
  const repairedHere = [...results.values()].some((r) => r.status === 'repaired')
  const restarted = processesRestarted || repairedHere
  // When only the platform restarted them, the wait ends as soon as none of them runs any more: on a
  // processes-mode platform the files are wiped, so a server restarted from a script exits at once.
  const platformOnly = !repairedHere && processList !== undefined ? processList : undefined
  await Promise.all(
    others.map(async (c) =>
      results.set(
        c,
        await runCheck(handles, c, signal, {
          waitForPort: restarted,
          restartedProcesses: platformOnly,
          first: restarted ? undefined : run.firstProbes?.get(c),
        }),
      ),
    ),
  )
  return checks.map((c) => results.get(c) as HealthCheckResult)
}

/**
 * The first probe of each declared check, side by side, for a caller that runs them together with other
 * probes of the sandbox (the fidelity probes) so that a resume where nothing was lost costs one round trip.
 * Process checks share one process list, read only with `listProcesses` (otherwise the fidelity probe reads
 * it). Never rejects: a failed or timed-out probe is a failed outcome, as in a run.
 */
export async function probeDeclaredChecks(
  checks: readonly HealthCheck[],
  run: Pick<DeclaredCheckRun, 'sandbox' | 'probeSandbox' | 'signal'> & { listProcesses: boolean },
): Promise<FirstProbes> {
  const { sandbox, probeSandbox = sandbox, signal } = run
  const handles = { sandbox, probeSandbox }
  const probed = checks.filter((c) => c.kind !== 'process' || run.listProcesses)
  let list: Promise<ProcessInfo[]> | undefined
  const processList = () => {
    list ??= probeSandbox.listProcesses()
    return list
  }
  const entries = await Promise.all(
    probed.map(async (check) => {
      const started = performance.now()
      const outcome = await bounded(check.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS, signal, async (bound) =>
        probe(handles, check, bound, check.kind === 'process' ? await processList() : undefined),
      )
      return [check, { outcome, probeMs: performance.now() - started }] as const
    }),
  )
  return new Map(entries)
}

/** The handle repairs and custom checks use, and the one the built-in (read-only) probes use. */
interface CheckHandles {
  sandbox: SandboxHandle
  probeSandbox: SandboxHandle
}

/** How one check runs: what its first probe may reuse, and whether to wait for a restarted server. */
interface CheckRun {
  /** Poll a port probe for a while: its process was just (re)started. */
  waitForPort?: boolean
  /** A process list to answer a process check's first probe. */
  processList?: ProcessInfo[] | undefined
  /** Processes the platform restarted: a port wait ends when none of them runs any more. */
  restartedProcesses?: ProcessInfo[] | undefined
  /** The first probe, made already. */
  first?: { outcome: ProbeOutcome; probeMs: number } | undefined
}

async function runCheck(
  handles: CheckHandles,
  check: HealthCheck,
  turnSignal: AbortSignal,
  run: CheckRun,
): Promise<HealthCheckResult> {
  const timeoutMs = check.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS
  const required = check.required === true
  const started = performance.now()
  const first = run.first?.outcome ?? (await firstProbe(handles, check, turnSignal, timeoutMs, run))
  const probeMs = run.first?.probeMs ?? performance.now() - started
  if (first.ok) {
    return { name: check.name, kind: check.kind, status: 'passed', required, probeMs, ...messageOf(first) }
  }
  const repair = repairOf(check)
  if (!repair) {
    return { name: check.name, kind: check.kind, status: 'failed', required, probeMs, ...messageOf(first) }
  }
  const repairStarted = performance.now()
  const repaired = await bounded(timeoutMs, turnSignal, async (signal) => {
    const context: HealthCheckContext = { sandbox: handles.sandbox, signal }
    await runRepair(context, repair)
    // Re-probe until it passes or the time is up: a restarted process needs time to listen.
    let last: ProbeOutcome = { ok: false }
    for (let attempt = 0; !signal.aborted; attempt++) {
      last = await probe(handles, check, signal)
      if (last.ok) return last
      await sleep(Math.min(50 * 2 ** attempt, 500), signal, 'resolve')
    }
    return last
  })
  const repairMs = performance.now() - repairStarted
  return {
    name: check.name,
    kind: check.kind,
    status: repaired.ok ? 'repaired' : 'failed',
    required,
    probeMs,
    repairMs,
    message: repaired.ok
      ? `${first.message ?? 'probe failed'}; repaired`
      : `${first.message ?? 'probe failed'}; still failing after repair${repaired.message ? `: ${repaired.message}` : ''}`,
  }
}

/**
 * A check's first probe, bounded by its timeout. A server a process check (or the platform) just restarted
 * needs a moment to listen; but a restarted process may also die at once (its files were wiped), so the wait
 * is a grace period, after which the check's own repair gets its turn instead of the whole timeout going to
 * a server nobody is starting.
 */
function firstProbe(
  handles: CheckHandles,
  check: HealthCheck,
  turnSignal: AbortSignal,
  timeoutMs: number,
  run: CheckRun,
): Promise<ProbeOutcome> {
  const { waitForPort = false, processList, restartedProcesses } = run
  return bounded(timeoutMs, turnSignal, async (signal) => {
    let outcome = await probe(handles, check, signal, processList)
    const grace = Math.min(PORT_START_GRACE_MS, timeoutMs / 2)
    const waitUntil = performance.now() + grace
    for (
      let attempt = 0;
      !outcome.ok && waitForPort && check.kind === 'port' && !signal.aborted && performance.now() < waitUntil;
      attempt++
    ) {
      await sleep(Math.min(50 * 2 ** attempt, 500), signal, 'resolve')
      if (signal.aborted) break
      outcome = await probe(handles, check, signal)
      if (!outcome.ok && restartedProcesses && !(await anyStillRunning(handles, restartedProcesses))) {
        return {
          ok: false,
          message: `${outcome.message ?? 'no answer'}; the processes restarted on resume exited`,
        }
      }
    }
    if (!outcome.ok && waitForPort && check.kind === 'port') {
      return {
        ok: false,
        message: `${outcome.message ?? 'no answer'} ${Math.round(grace)} ms after a restart`,
      }
    }
    return outcome
  })
}

/** Whether any of `processes` (by pid) is still running; `true` when the list cannot be read. */
async function anyStillRunning(handles: CheckHandles, processes: ProcessInfo[]): Promise<boolean> {
  try {
    const running = await handles.probeSandbox.listProcesses()
    return processes.some((p) => running.some((r) => r.pid === p.pid))
  } catch {
    return true
  }
}

function messageOf(outcome: ProbeOutcome): { message?: string } {
  return outcome.message === undefined ? {} : { message: outcome.message }
}

function repairOf(check: HealthCheck): HealthRepair | undefined {
  if (check.kind === 'process') {
    return async ({ sandbox }) => {
      await sandbox.startProcess(check.command, {
        ...(check.cwd ? { cwd: check.cwd } : {}),
        ...(check.envs ? { envs: check.envs } : {}),
      })
    }
  }
  if (check.kind === 'custom') return check.repair
  return check.repair
}

async function runRepair(context: HealthCheckContext, repair: HealthRepair): Promise<void> {
  if (typeof repair === 'function') return repair(context)
  if ('command' in repair) {
    if (repair.background) {
      await context.sandbox.startProcess(repair.command, repair.cwd ? { cwd: repair.cwd } : {})
      return
    }
    const result = await context.sandbox.runCommand(repair.command, {
      ...(repair.cwd ? { cwd: repair.cwd } : {}),
      signal: context.signal,
    })
    if (result.exitCode !== 0) {
      throw new Error(`repair command exited with ${result.exitCode}: ${result.stderr.trim().slice(0, 200)}`)
    }
    return
  }
  const result = await context.sandbox.runCode(repair.code, {
    language: repair.language ?? 'python',
    signal: context.signal,
  })
  if (result.error) throw new Error(`repair code raised ${result.error.name}: ${result.error.value}`)
}

async function probe(
  handles: CheckHandles,
  check: HealthCheck,
  signal: AbortSignal,
  processList?: ProcessInfo[],
): Promise<ProbeOutcome> {
  const sandbox = handles.probeSandbox
  switch (check.kind) {
    case 'process': {
      const processes = processList ?? (await sandbox.listProcesses())
      const found = processes.some((p) => commandMatches(p, check.command))
      return found
        ? { ok: true }
        : { ok: false, message: `no process running ${JSON.stringify(check.command)}` }
    }
    case 'port':
      return probePort(sandbox, check, signal)
    case 'code': {
      const result = await sandbox.runCode(check.code, { language: check.language ?? 'python', signal })
      if (result.error) return { ok: false, message: `${result.error.name}: ${result.error.value}` }
      return truthy(result.text)
        ? { ok: true }
        : { ok: false, message: `returned ${result.text ?? 'nothing'}` }
    }
    case 'file':
      return (await sandbox.exists(check.path))
        ? { ok: true }
        : { ok: false, message: `${check.path} is missing` }
    case 'custom': {
      const outcome = await check.run({ sandbox: handles.sandbox, signal })
      if (typeof outcome === 'boolean') return { ok: outcome }
      return outcome.message === undefined ? { ok: outcome.ok } : { ok: outcome.ok, message: outcome.message }
    }
  }
}

/** True when a process's command line runs `command` (substring of what the platform reports). */
function commandMatches(
  process: { command: string; cmd?: string; args?: string[] },
  command: string,
): boolean {
  if (process.command.includes(command)) return true
  const full = [process.cmd ?? '', ...(process.args ?? [])].join(' ')
  return full.includes(command)
}

function truthy(text: string | null): boolean {
  if (text === null) return false
  const value = text.trim()
  return ![
    '',
    'False',
    'false',
    'None',
    'null',
    'undefined',
    '0',
    '0.0',
    "''",
    '""',
    'NaN',
    '[]',
    '{}',
  ].includes(value)
}

// Probed from inside the sandbox with bash's /dev/tcp, which needs no curl or python in the template.
// With a path, a minimal HTTP/1.0 GET is sent and the status line read; a status below 500 passes.
function portScript(check: PortHealthCheck): string {
  const port = String(check.port)
  if (check.path === undefined) {
    return `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo open || { echo closed; exit 1; }`
  }
  const path = check.path.startsWith('/') ? check.path : `/${check.path}`
  const quoted = shellQuote(path)
  return [
    `exec 3<>/dev/tcp/127.0.0.1/${port} 2>/dev/null || { echo closed; exit 1; }`,
    `printf 'GET %s HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n' ${quoted} >&3`,
    `IFS=' ' read -r -t 5 proto status rest <&3 || { echo 'no answer'; exit 1; }`,
    `echo "status $status"`,
    `[ -n "$status" ] && [ "$status" -lt 500 ] 2>/dev/null`,
  ].join('\n')
}

async function probePort(
  sandbox: SandboxHandle,
  check: PortHealthCheck,
  signal: AbortSignal,
): Promise<ProbeOutcome> {
  const result = await sandbox.runCommand(portScript(check), { timeoutMs: 8000, signal })
  const target = `port ${check.port}${check.path === undefined ? '' : ` ${check.path}`}`
  if (result.exitCode === 0) return { ok: true }
  const said = result.stdout.trim().split('\n').pop() ?? ''
  return { ok: false, message: `${target} does not answer${said ? ` (${said})` : ''}` }
}

/**
 * Runs `work` with its own signal that fires after `timeoutMs` or when `parent` fires; a timeout or a throw
 * is a failed outcome, never an exception (the caller decides what a failure means).
 */
async function bounded(
  timeoutMs: number,
  parent: AbortSignal,
  work: (signal: AbortSignal) => Promise<ProbeOutcome>,
): Promise<ProbeOutcome> {
  const controller = new AbortController()
  const onParent = () => controller.abort(parent.reason)
  parent.addEventListener('abort', onParent, { once: true })
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<ProbeOutcome>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(
        new SandkeepError({ code: 'TIMEOUT', message: `health check timed out after ${timeoutMs} ms` }),
      )
      resolve({ ok: false, message: `timed out after ${timeoutMs} ms` })
    }, timeoutMs)
  })
  try {
    return await Promise.race([
      work(controller.signal).catch((error: unknown) => ({
        ok: false,
        message: error instanceof Error ? error.message : String(error),
      })),
      timedOut,
    ])
  } finally {
    clearTimeout(timer)
    parent.removeEventListener('abort', onParent)
  }
}
