// What happens between two turns: the user's scripted idle (the sandbox sits paused) and an injected fault.
import { setTimeout as sleep } from 'node:timers/promises'
import type { TranscriptHealthCheck, TranscriptTurn } from '../transcript.js'
import { type EmbeddedHost, injectFault } from './host.js'
import type { RunDemoOptions } from './options.js'

/**
 * The user is away: the sandbox sits paused. A scripted idle is shown at its scripted length but waited for a
 * short, real time, so paused time is visible without the demo taking hours. False when interrupted meanwhile.
 */
export async function waitScriptedIdle(turn: TranscriptTurn, options: RunDemoOptions): Promise<boolean> {
  if (turn.idleBeforeMs <= 0) return true
  const { renderer, signal } = options
  const waitedMs = Math.min(options.idleMs, turn.idleBeforeMs)
  renderer.progress(`idle (${Math.round(turn.idleBeforeMs / 60_000)} min scripted), sandbox paused`)
  await sleep(waitedMs, undefined, { signal }).catch(() => {})
  if (signal.aborted) return false
  renderer.progress(null)
  renderer.emit({ type: 'idle', turn: turn.index, scriptedMs: turn.idleBeforeMs, waitedMs })
  return true
}

/** Injects `--fault` into the embedded host when `turn` is the one it is scheduled before. */
export async function injectScheduledFault(
  turn: TranscriptTurn,
  options: RunDemoOptions,
  host: EmbeddedHost | undefined,
  sandboxId: string | undefined,
): Promise<void> {
  const { fault, renderer } = options
  if (!fault || fault.turn !== turn.index) return
  if (!host) throw new Error('faults need the embedded local host')
  renderer.progress(`injecting fault ${fault.name}`)
  const detail = await injectFault(host, fault.name, {
    sandboxId,
    serverCommands: serverCommands(options.transcript.healthChecks),
  })
  renderer.emit({ type: 'fault', turn: turn.index, fault: fault.name, detail })
}

/** Commands that start the transcript's servers (from its process checks and background repairs). */
function serverCommands(checks: TranscriptHealthCheck[]): string[] {
  const commands: string[] = []
  for (const check of checks) {
    if (check.kind === 'process') commands.push(check.command)
    if ('repair' in check && check.repair && 'command' in check.repair) commands.push(check.repair.command)
  }
  return commands
}
