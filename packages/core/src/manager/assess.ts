import { SandkeepError } from '../errors.js'
import { probeFidelity } from '../fidelity.js'
import type { HealthCheckResult } from '../health.js'
import { runDeclaredChecks } from '../health-runner.js'
import { replaySteps } from '../rehydrate.js'
import type { ResumeOutcome, ResumeReport } from '../report.js'
import type { ProcessInfo, SandboxHandle } from '../sandbox-provider.js'
import type { SessionRecord } from '../session-store.js'
import type { Climbed } from './resume-ladder.js'
import type { ResumeCalls, TurnImpl } from './turn.js'
import { watchProcessCalls } from './turn-handle.js'

/** What the restore step found and did: the survival flags, the built-in probes' results, the replay. */
interface Restored {
  survived: ResumeReport['survived']
  checks: HealthCheckResult[]
  stateLost: boolean
  rehydratedSteps: number
  rehydrateMs: number
  /** The process list the fidelity probe read, for the declared process checks. */
  processList?: ProcessInfo[]
  processesRestarted: boolean
}

/**
 * Everything after the ladder: set up a fresh sandbox (bootstrap, journal replay) or probe what survived the
 * pause and rehydrate what did not, run the declared checks, emit the report.
 * @throws SandkeepError HEALTH_CHECK_FAILED when a required check still fails (the report is set first)
 */
export async function assess(
  turn: TurnImpl,
  climbed: Climbed,
  calls: ResumeCalls,
  timings: { connectMs: number; resumeStarted: number },
): Promise<void> {
  const { config, events } = turn.ctx
  const { outcome, record } = climbed
  // The built-in declared probes only read (a port probe's command leaves no process behind).
  const probeHandle = climbed.handle
  const handle = watchProcessCalls(turn, climbed.handle)
  turn.handle = handle
  const healthStarted = performance.now()
  const restored = await restore(turn, outcome, handle, record)
  const checks = restored.checks
  if (outcome === 'created') {
    checks.push(...skippedChecks(turn))
  } else if (config.healthChecks.length > 0) {
    checks.push(
      ...(await runDeclaredChecks(
        handle,
        config.healthChecks,
        calls.signal,
        restored.processList,
        restored.processesRestarted,
        probeHandle,
      )),
    )
  }
  const healthMs = performance.now() - healthStarted - restored.rehydrateMs
  for (const result of checks) {
    events.emit('health-check', {
      conversationId: turn.conversationId,
      tenant: turn.tenant,
      sandboxId: handle.id,
      result,
    })
  }
  turn.readyAt = Date.now()
  const report: ResumeReport = {
    conversationId: turn.conversationId,
    tenant: turn.tenant,
    sandboxId: handle.id,
    ...(climbed.previousSandboxId !== undefined ? { previousSandboxId: climbed.previousSandboxId } : {}),
    outcome,
    timings: {
      storeMs: turn.storeMs,
      connectMs: timings.connectMs,
      healthMs: Math.max(0, healthMs),
      rehydrateMs: restored.rehydrateMs,
      // A lazy turn counts from its first use; an eager one from beginTurn.
      totalMs: performance.now() - (turn.lazyStart ? timings.resumeStarted : turn.beganAt),
    },
    survived: restored.survived,
    checks,
    stateLost: restored.stateLost,
    retries: calls.retries,
    rehydratedSteps: restored.rehydratedSteps,
  }
  turn.report = report
  events.emit('resume-end', { conversationId: turn.conversationId, tenant: turn.tenant, report })
  const failed = checks.filter((c) => c.required && c.status === 'failed')
  if (failed.length > 0) {
    throw new SandkeepError({
      code: 'HEALTH_CHECK_FAILED',
      message: `Required health check(s) ${failed.map((c) => `'${c.name}' (${c.message ?? 'failed'})`).join(', ')} still failed after repair.`,
      tenant: turn.tenant,
      conversationId: turn.conversationId,
      sandboxId: handle.id,
    })
  }
}

/** A brand-new sandbox has nothing to check yet (bootstrap sets it up); the turn itself starts servers. */
function skippedChecks(turn: TurnImpl): HealthCheckResult[] {
  return turn.ctx.config.healthChecks.map((check) => ({
    name: check.name,
    kind: check.kind,
    status: 'skipped',
    required: check.required === true,
    probeMs: 0,
    message: 'new sandbox: nothing to check yet',
  }))
}

/** Bootstrap and replay on a fresh sandbox; on a resumed one, the fidelity probes and a replay of what was lost. */
async function restore(
  turn: TurnImpl,
  outcome: ResumeOutcome,
  handle: SandboxHandle,
  record: SessionRecord | null,
): Promise<Restored> {
  const { config } = turn.ctx
  const created = outcome === 'created' || outcome === 'recreated'
  const restored: Restored = {
    survived:
      outcome === 'recreated'
        ? { memory: false, filesystem: false, processes: false }
        : { memory: null, filesystem: null, processes: null },
    checks: [],
    stateLost: outcome === 'recreated' || turn.sessionLost,
    rehydratedSteps: 0,
    rehydrateMs: 0,
    processesRestarted: false,
  }
  if (created) turn.manifestBase = null
  // A sandbox another turn (re)created meanwhile is that turn's to bootstrap and rehydrate.
  if (created && !turn.adopted) {
    const started = performance.now()
    await runBootstrap(turn, handle)
    if (config.rehydrate === 'journal')
      restored.rehydratedSteps = await replayJournal(
        turn,
        handle,
        outcome === 'created' ? 'created' : 'recreated',
      )
    restored.rehydrateMs += performance.now() - started
  } else if (config.fidelityProbes && record?.manifest && !created) {
    await probeAndRehydrate(turn, handle, record, restored)
  }
  return restored
}

/** The built-in probes against the manifest the previous turn left; lost memory or files → journal replay. */
async function probeAndRehydrate(
  turn: TurnImpl,
  handle: SandboxHandle,
  record: SessionRecord,
  restored: Restored,
): Promise<void> {
  const { config } = turn.ctx
  const manifest = record.manifest!
  const fidelity = await probeFidelity(handle, manifest, turn.controller.signal, config.retry)
  restored.survived = fidelity.survived
  // What the turn end need not write again: sentinels and the marker found intact, and the process
  // list (read now, or known empty: none was recorded for this very sandbox and none can appear alone).
  turn.verified = { contexts: fidelity.keptContexts, marker: fidelity.survived.filesystem === true }
  turn.processesAtResume =
    fidelity.processList ??
    (manifest.sandboxId === handle.id && manifest.processes?.length === 0 ? [] : undefined)
  if (fidelity.processList) restored.processList = fidelity.processList
  restored.processesRestarted = fidelity.processesRestarted
  const lost = fidelity.survived.memory === false || fidelity.survived.filesystem === false
  if (lost) {
    restored.stateLost = true
    if (config.rehydrate === 'journal') {
      const started = performance.now()
      // Files survived: commands and file writes left their effects on disk, so only code runs again.
      const codeOnly = fidelity.survived.filesystem === true
      const steps = await replayJournal(
        turn,
        handle,
        fidelity.survived.memory === false ? 'memory-lost' : 'filesystem-lost',
        codeOnly,
      )
      restored.rehydratedSteps = steps
      restored.rehydrateMs += performance.now() - started
      const memory = fidelity.checks.find((c) => c.name === 'memory')
      if (memory && memory.status === 'failed' && steps > 0) {
        memory.status = 'repaired'
        memory.repairMs = performance.now() - started
        memory.message = `${memory.message}; rehydrated from the journal (${steps} steps)`
      }
    }
  }
  restored.checks.push(...fidelity.checks)
}

async function runBootstrap(turn: TurnImpl, handle: SandboxHandle): Promise<void> {
  const bootstrap = turn.ctx.config.bootstrap
  if (bootstrap === undefined) return
  if (typeof bootstrap === 'function') {
    await bootstrap(handle)
    return
  }
  const outcome = await replaySteps(handle, bootstrap, turn.controller.signal)
  for (const context of outcome.contexts) turn.trackContext(context.language, undefined)
}

/** Replays the journal (only its code steps with `codeOnly`); a failed step is reported, not thrown. */
async function replayJournal(
  turn: TurnImpl,
  handle: SandboxHandle,
  reason: 'created' | 'recreated' | 'memory-lost' | 'filesystem-lost',
  codeOnly = false,
): Promise<number> {
  const { store, events } = turn.ctx
  const started = performance.now()
  const steps = (await store.readJournal(turn.key))
    .map((entry) => entry.step)
    .filter((step) => !codeOnly || step.kind === 'code')
  if (steps.length === 0) return 0
  let done = 0
  try {
    const outcome = await replaySteps(handle, steps, turn.controller.signal)
    done = outcome.steps
    for (const context of outcome.contexts) turn.trackContext(context.language, undefined)
  } catch (error) {
    // The turn goes on with what could be restored; the report says state was lost and the error event says why.
    if (turn.controller.signal.aborted) throw error
    turn.ctx.emitError('rehydrate', error, turn.key)
  }
  events.emit('rehydrate', {
    conversationId: turn.conversationId,
    tenant: turn.tenant,
    sandboxId: handle.id,
    steps: done,
    ms: performance.now() - started,
    reason,
  })
  return done
}
