// Built-in fidelity probes: what did the pause keep? Each compares the sandbox with the manifest the
// previous turn wrote at its end: a sentinel value in every interpreter context it used (memory), a marker
// file (filesystem), and the list of background processes (processes).
import { mergeAbortSignals } from '../contract/abort-signals.js'
import { SandkeepError } from '../contract/errors.js'
import type { HealthCheckResult } from '../contract/health.js'
import type { CodeLanguage } from '../contract/journal.js'
import type { RetryPolicy } from '../contract/retry.js'
import type { ProcessInfo, SandboxHandle } from '../contract/sandbox-provider.js'
import type { FileWitness, TurnManifest } from '../contract/session-store.js'
import { shellQuote } from '../contract/shell.js'
import { isPlatformError, type ProbeCellAnswer, probeCall, runProbeCell } from './fidelity-cell.js'
import { fileDigests } from './file-digests.js'
import { type ProbeScope, retryOf } from './scope.js'

/** Global variable that holds the memory sentinel in each interpreter context. */
export const SENTINEL_VARIABLE = '__sandkeep_sentinel__'
/** Marker file written at turn end. Under the sandbox's home so that it shares the user's files' fate. */
export const MARKER_PATH = '/home/user/.sandkeep/marker'
/**
 * Bound of an envd read of the marker, ms. Code in the sandbox may have replaced the marker with a FIFO, whose
 * read never ends: the probe must fail and repair, not hold the turn.
 */
const MARKER_READ_TIMEOUT_MS = 5000

/** An interpreter context a turn ran code in. */
export interface UsedContext {
  /** Interpreter language. */
  language: CodeLanguage
  /** Context id; null for the language's default context. */
  contextId: string | null
}

/** What the built-in probes found. */
export interface FidelityOutcome {
  /** Probe results named `memory`, `filesystem`, `processes`. */
  checks: HealthCheckResult[]
  /** true kept, false lost, null unknown (nothing recorded to compare with). */
  survived: { memory: boolean | null; filesystem: boolean | null; processes: boolean | null }
  /** Contexts whose sentinel was found: they keep their place in the next manifest. */
  keptContexts: UsedContext[]
  /** True when the marker file was found intact (the turn end need not write it again). */
  markerKept: boolean
  /** True when the marker file was missing and no file witness decided (see manager/marker-verdict.ts). */
  markerGone: boolean
  /** The process list the processes probe read, when it read one (declared process checks reuse it). */
  processList?: ProcessInfo[]
  /** True when the platform restarted recorded processes on resume (same commands, new pids): they may still be starting. */
  processesRestarted: boolean
}

function readSentinelCode(language: CodeLanguage): string {
  return language === 'javascript'
    ? `globalThis.${SENTINEL_VARIABLE}`
    : `globals().get('${SENTINEL_VARIABLE}')`
}

function unquote(text: string | null): string | null {
  if (text === null) return null
  const value = text.trim()
  if (value.length >= 2 && (value[0] === "'" || value[0] === '"') && value.at(-1) === value[0]) {
    return value.slice(1, -1)
  }
  return value
}

export { PROBE_CELL_TAG } from './fidelity-cell.js'

/**
 * The marker as the filesystem probe found it: its content, null when it is missing, `unreadable` when
 * something that is not our regular file sits at its path (code in the sandbox replaced it: a directory, a
 * FIFO, a symlink), `unknown` when the platform failed the read.
 */
type MarkerState = string | null | { unreadable: string } | { unknown: string }
type MarkerRead = () => Promise<MarkerState>

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * Compares the sandbox with `manifest`; the probes run in parallel. When the manifest has both a marker file
 * and the default Python context, one cell answers the memory and filesystem probes together. Probe calls are
 * retried like connect (`retry`); a probe that still errored reports "unknown" (null), never a failed turn.
 */
export async function probeFidelity(scope: ProbeScope): Promise<FidelityOutcome> {
  const { sandbox, manifest, signal } = scope
  const retry = retryOf(scope)
  const readByEnvd: MarkerRead = async () => {
    const path = manifest.filesystem!.path
    const timeout = AbortSignal.timeout(MARKER_READ_TIMEOUT_MS)
    const bounded = mergeAbortSignals(signal, timeout)
    try {
      return await probeCall(() => sandbox.readFile(path, { signal: bounded }), retry, bounded)
    } catch (error) {
      if (signal.aborted) throw error
      if (timeout.aborted) return { unreadable: `reading it took over ${MARKER_READ_TIMEOUT_MS} ms` }
      if (SandkeepError.hasCode(error, 'INVALID_ARGUMENT')) return { unreadable: describe(error) }
      if (!SandkeepError.hasCode(error, 'FILE_NOT_FOUND')) return { unknown: describe(error) }
      // Missing, or a dangling symlink (which envd reports the same way): only the latter is ours to repair.
      const slash = path.lastIndexOf('/')
      try {
        const entries = await sandbox.listDir(path.slice(0, slash) || '/', { signal })
        return entries.some((entry) => entry.name === path.slice(slash + 1))
          ? { unreadable: 'not a regular file' }
          : null
      } catch (listError) {
        if (signal.aborted) throw listError
        return SandkeepError.hasCode(listError, 'FILE_NOT_FOUND') ? null : { unknown: describe(listError) }
      }
    }
  }
  const combined = manifest.filesystem
    ? manifest.memory?.find((entry) => entry.language === 'python' && entry.contextId === null)
    : undefined
  const cell = combined
    ? runProbeCell(sandbox, combined, manifest.filesystem!.path, signal, retry)
    : undefined
  const readMarker: MarkerRead = async () => {
    const marker = cell ? (await cell).marker : undefined
    if (typeof marker === 'string' || marker === null) return marker
    // The interpreter saw something other than a regular file: envd must not read it (a FIFO never ends).
    if (typeof marker === 'object' && typeof (marker as { unreadable?: unknown }).unreadable === 'string')
      return { unreadable: (marker as { unreadable: string }).unreadable }
    // The interpreter could not read it (or did not answer): ask envd, which is what the probe trusts.
    return readByEnvd()
  }
  const [memory, filesystem, processes] = await Promise.all([
    probeMemory(sandbox, manifest, signal, retry, combined && cell ? { entry: combined, cell } : undefined),
    probeFilesystem(sandbox, manifest, readMarker, signal),
    probeProcesses(sandbox, manifest, signal, retry),
  ])
  return {
    checks: [memory.result, filesystem.result, processes.result],
    survived: { memory: memory.survived, filesystem: filesystem.survived, processes: processes.survived },
    keptContexts: memory.kept,
    markerKept: filesystem.survived === true && filesystem.markerMissing !== true,
    markerGone: 'markerGone' in filesystem && filesystem.markerGone === true,
    ...(processes.list ? { processList: processes.list } : {}),
    processesRestarted: processes.restarted,
  }
}

async function probeMemory(
  sandbox: SandboxHandle,
  manifest: TurnManifest,
  signal: AbortSignal,
  retry: RetryPolicy,
  combined:
    | { entry: NonNullable<TurnManifest['memory']>[number]; cell: Promise<ProbeCellAnswer> }
    | undefined,
) {
  const started = performance.now()
  const entries = manifest.memory ?? []
  if (entries.length === 0) {
    return {
      survived: null,
      kept: [] as UsedContext[],
      result: skipped('memory', 'no interpreter context was used before the pause', started),
    }
  }
  const found = await Promise.all(
    entries.map(async (entry) => {
      const language = entry.language === 'javascript' ? 'javascript' : 'python'
      if (entry === combined?.entry) return { entry, language, ok: (await combined.cell).sentinelKept }
      try {
        const result = await probeCall(
          () =>
            sandbox.runCode(readSentinelCode(language), {
              language,
              ...(entry.contextId ? { contextId: entry.contextId } : {}),
              signal,
            }),
          retry,
          signal,
        )
        return { entry, language, ok: !result.error && unquote(result.text) === entry.value }
      } catch (error) {
        if (signal.aborted) throw error
        if (isPlatformError(error)) return { entry, language, ok: null }
        // A context the platform no longer knows is memory lost, not a failed turn.
        if (SandkeepError.isInstance(error) && error.code !== 'ABORTED') return { entry, language, ok: false }
        throw error
      }
    }),
  )
  const lost = found.filter((f) => f.ok === false)
  const unknown = found.filter((f) => f.ok === null)
  const kept = found
    .filter((f) => f.ok === true)
    .map((f) => ({ language: f.language as CodeLanguage, contextId: f.entry.contextId }))
  const survived = lost.length > 0 ? false : unknown.length > 0 ? null : true
  const name = (f: (typeof found)[number]) => f.entry.contextId ?? `${f.entry.language} default`
  return {
    survived,
    kept,
    result: probed(
      'memory',
      survived === true ? 'passed' : 'failed',
      started,
      survived === true
        ? `interpreter state kept in ${entries.length} context(s)`
        : survived === false
          ? `interpreter state lost in ${lost.map(name).join(', ')}`
          : `unknown: the probe call failed on the platform in ${unknown.map(name).join(', ')}`,
    ),
  }
}

async function probeFilesystem(
  sandbox: SandboxHandle,
  manifest: TurnManifest,
  read: MarkerRead,
  signal: AbortSignal,
) {
  const started = performance.now()
  const marker = manifest.filesystem
  if (!marker) {
    return {
      survived: null,
      result: skipped('filesystem', 'no marker file was written', started),
    }
  }
  const content = await read()
  if (typeof content === 'object' && content !== null) {
    const result = probed('filesystem', 'failed', started, '')
    if ('unknown' in content) {
      result.message = `unknown: the marker file could not be read (${content.unknown})`
      return { survived: null, result }
    }
    // Not our marker any more (code in the sandbox put something else there): what it says about the files is
    // unknown. Put a regular marker back so that this and every later turn can read it.
    const repairStarted = performance.now()
    try {
      // A shell `rm`, not envd's remove: an envd may refuse to remove a symlink it cannot resolve.
      const quoted = shellQuote(marker.path)
      const removed = await sandbox.runCommand(`rm -rf -- ${quoted}`, {
        signal,
        timeoutMs: MARKER_READ_TIMEOUT_MS,
      })
      if (removed.exitCode !== 0)
        throw new Error(`rm exited with ${removed.exitCode}: ${removed.stderr.trim()}`)
      await sandbox.writeFile(marker.path, marker.value, { signal })
      result.status = 'repaired'
      result.message = `marker file was replaced (${content.unreadable}); rewrote it`
    } catch (error) {
      if (signal.aborted) throw error
      result.message = `marker file was replaced (${content.unreadable}) and could not be rewritten: ${describe(error)}`
    }
    return { survived: null, result: { ...result, repairMs: performance.now() - repairStarted } }
  }
  if (content === null) {
    // Code in the sandbox may have removed the marker alone (a clean-up of dotfiles): files sandkeep saw
    // written that are still there as written say the files were kept.
    const kept = await keptWitnesses(sandbox, marker.witnesses ?? [], signal)
    if (kept > 0) {
      return {
        survived: true,
        markerMissing: true,
        result: probed(
          'filesystem',
          'passed',
          started,
          `marker file is gone, but ${kept} of ${marker.witnesses!.length} file(s) written earlier are still there as written: files kept (the marker is written again at the turn end)`,
        ),
      }
    }
  }
  const survived = content === marker.value
  return {
    survived,
    ...(content === null ? { markerGone: true } : {}),
    result: probed(
      'filesystem',
      survived ? 'passed' : 'failed',
      started,
      survived
        ? 'files kept'
        : content === null
          ? 'marker file is gone: files were lost'
          : 'marker file differs',
    ),
  }
}

/** How many of the witnesses the sandbox still holds with the content they were written with. */
async function keptWitnesses(
  sandbox: SandboxHandle,
  witnesses: readonly FileWitness[],
  signal: AbortSignal,
): Promise<number> {
  if (witnesses.length === 0) return 0
  try {
    const digests = await fileDigests(
      sandbox,
      witnesses.map((w) => w.path),
      signal,
    )
    return witnesses.filter((w) => {
      const found = digests?.get(w.path)
      return typeof found === 'object' && found.sha256 === w.sha256
    }).length
  } catch (error) {
    if (signal.aborted) throw error
    // Nothing could be looked at: no evidence either way, so the missing marker decides.
    return 0
  }
}

async function probeProcesses(
  sandbox: SandboxHandle,
  manifest: TurnManifest,
  signal: AbortSignal,
  retry: RetryPolicy,
) {
  const started = performance.now()
  const recorded = manifest.processes
  if (!recorded || recorded.length === 0) {
    return {
      survived: null,
      list: undefined,
      restarted: false,
      result: skipped('processes', 'no background process was running before the pause', started),
    }
  }
  let running: Awaited<ReturnType<SandboxHandle['listProcesses']>>
  try {
    // Any failure but a missing capability is the platform's, not an answer about the processes.
    running = await probeCall(
      () => sandbox.listProcesses(),
      retry,
      signal,
      (error) => !SandkeepError.hasCode(error, 'CAPABILITY_UNSUPPORTED'),
    )
  } catch (error) {
    if (SandkeepError.hasCode(error, 'CAPABILITY_UNSUPPORTED')) {
      return {
        survived: null,
        list: undefined,
        restarted: false,
        result: skipped('processes', 'the provider cannot list processes', started),
      }
    }
    if (signal.aborted || !SandkeepError.isInstance(error)) throw error
    return {
      survived: null,
      list: undefined,
      restarted: false,
      result: probed(
        'processes',
        'failed',
        started,
        `unknown: the process list could not be read (${error.message})`,
      ),
    }
  }
  const missing = recorded.filter((p) => !running.some((r) => r.command === p.command))
  const list = running
  const samePid = recorded.filter((p) => running.some((r) => r.command === p.command && r.pid === p.pid))
  const survived = missing.length === 0
  let message: string
  if (!survived)
    message = `not running any more: ${missing.map((p) => JSON.stringify(p.command.slice(0, 80))).join(', ')}`
  else if (samePid.length === recorded.length) message = `${recorded.length} process(es) kept with their pids`
  else message = `${recorded.length} process(es) running, restarted by the platform (new pids)`
  return {
    survived,
    list,
    // Restarted = running again under a new pid (processes-mode platforms). A process that is simply gone
    // was not restarted: a port check must not wait for a server nobody is starting.
    restarted: recorded.some((p) => !samePid.includes(p) && !missing.includes(p)),
    result: probed('processes', survived ? 'passed' : 'failed', started, message),
  }
}

type ProbeKind = 'memory' | 'filesystem' | 'processes'

/** A built-in probe's result (named after its kind, never required), timed from `started`. */
function probed(
  kind: ProbeKind,
  status: HealthCheckResult['status'],
  started: number,
  message: string,
): HealthCheckResult {
  return { name: kind, kind, status, required: false, probeMs: performance.now() - started, message }
}

function skipped(kind: ProbeKind, message: string, started: number): HealthCheckResult {
  return probed(kind, 'skipped', started, message)
}
