// The manifest a turn end writes for the next turn's fidelity probes (see fidelity.ts).
import { randomBytes } from 'node:crypto'
import { SandkeepError } from '../contract/errors.js'
import type { CodeLanguage } from '../contract/journal.js'
import type { ProcessInfo, SandboxHandle } from '../contract/sandbox-provider.js'
import type { FileWitness, TurnManifest } from '../contract/session-store.js'
import { MAX_MANIFEST_WITNESSES } from '../store/limits.js'
import { MARKER_PATH, SENTINEL_VARIABLE, type UsedContext } from './fidelity.js'

function setSentinelCode(language: CodeLanguage, value: string): string {
  const literal = JSON.stringify(value)
  return language === 'javascript'
    ? `globalThis.${SENTINEL_VARIABLE} = ${literal}; undefined`
    : `${SENTINEL_VARIABLE} = ${literal}`
}

/** What the resume verified, so the turn end does not write again what is known to be in place. */
export interface VerifiedState {
  /** Contexts whose sentinel was found at resume (same sandbox): their entry carries over as is. */
  contexts: readonly UsedContext[]
  /** True when the marker file was found intact at resume (same sandbox). */
  marker: boolean
}

/**
 * Writes what the next turn will compare with, in parallel: the sentinel in each context this turn used that
 * was not verified at resume (a verified one still holds the value, so overlapping turns agree and nothing is
 * re-run), the marker file unless it was verified, and the process list. `processes` is the list as the
 * resume read it, given when nothing since could have changed it (no process started, killed or run): then
 * it is recorded as is instead of being listed again. `written` are the files this turn wrote, oldest first:
 * they become the marker's witnesses, ahead of those the previous manifest of this sandbox had.
 */
export async function writeManifest(
  sandbox: SandboxHandle,
  used: readonly UsedContext[],
  previous: TurnManifest | null,
  verified: VerifiedState,
  signal: AbortSignal,
  processes?: readonly ProcessInfo[],
  written: readonly FileWitness[] = [],
): Promise<TurnManifest> {
  const sameSandbox = previous?.sandboxId === sandbox.id ? previous : null
  const previousEntry = (context: UsedContext) =>
    sameSandbox?.memory?.find((m) => m.language === context.language && m.contextId === context.contextId)
  const same = (a: UsedContext, b: UsedContext) => a.language === b.language && a.contextId === b.contextId
  const kept = verified.contexts.filter((c) => previousEntry(c) !== undefined)
  const toSet = used.filter((c) => !kept.some((k) => same(k, c)))
  const markerKept = verified.marker && sameSandbox?.filesystem ? sameSandbox.filesystem : null
  const markerValue = markerKept?.value ?? sameSandbox?.filesystem?.value ?? token()
  const recordProcess = (p: ProcessInfo) =>
    p.cwd ? { pid: p.pid, command: p.command, cwd: p.cwd } : { pid: p.pid, command: p.command }
  const [sentinels, processList] = await Promise.all([
    Promise.all(
      toSet.map(async (context) => {
        const value = previousEntry(context)?.value ?? token()
        const result = await sandbox.runCode(setSentinelCode(context.language, value), {
          language: context.language,
          ...(context.contextId ? { contextId: context.contextId } : {}),
          signal,
        })
        if (result.error) throw new Error(`could not set the memory sentinel: ${result.error.value}`)
        return {
          language: context.language,
          contextId: context.contextId,
          variable: SENTINEL_VARIABLE,
          value,
        }
      }),
    ),
    processes
      ? processes.map(recordProcess)
      : sandbox.listProcesses().then(
          (list) => list.map(recordProcess),
          (error: unknown) => {
            if (SandkeepError.hasCode(error, 'CAPABILITY_UNSUPPORTED')) return null
            throw error
          },
        ),
    markerKept ? Promise.resolve() : sandbox.writeFile(MARKER_PATH, markerValue, { signal }),
  ])
  const memory = [...kept.map((c) => previousEntry(c)).filter((m) => m !== undefined), ...sentinels]
  const witnesses = newestWitnesses(written, sameSandbox?.filesystem?.witnesses ?? [])
  return {
    writtenAt: Date.now(),
    sandboxId: sandbox.id,
    memory: memory.length === 0 ? null : memory,
    filesystem: { path: MARKER_PATH, value: markerValue, ...(witnesses.length > 0 ? { witnesses } : {}) },
    processes: processList,
  }
}

/** This turn's writes (newest last) ahead of the earlier witnesses, one per path, at most the manifest's cap. */
function newestWitnesses(written: readonly FileWitness[], earlier: readonly FileWitness[]): FileWitness[] {
  const witnesses: FileWitness[] = []
  for (const witness of [...[...written].reverse(), ...earlier]) {
    if (witnesses.length >= MAX_MANIFEST_WITNESSES) break
    if (!witnesses.some((w) => w.path === witness.path)) witnesses.push(witness)
  }
  return witnesses
}

function token(): string {
  return randomBytes(9).toString('base64url')
}
