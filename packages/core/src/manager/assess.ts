import { type FidelityOutcome, probeFidelity, type UsedContext } from '../assessment/fidelity.js'
import {
  type CarriedVerdict,
  type CarryPlan,
  carryPlan,
  keptOutcome,
  runCarried,
} from '../assessment/fidelity-carried.js'
import { runCarriedCommand } from '../assessment/fidelity-carried-command.js'
import type { VerifiedState } from '../assessment/fidelity-manifest.js'
import { type FirstProbes, probeDeclaredChecks, runDeclaredChecks } from '../assessment/health-runner.js'
import { type ReplayOutcome, replayFailedError, replaySteps } from '../assessment/rehydrate.js'
import type { AssessmentScope } from '../assessment/scope.js'
import { SandkeepError } from '../contract/errors.js'
import type { HealthCheckResult } from '../contract/health.js'
import type { RehydrateFailures, ResumeReport } from '../contract/report.js'
import type {
  CodeResult,
  CommandResult,
  ProcessInfo,
  RunCodeOptions,
  RunCommandOptions,
  SandboxHandle,
} from '../contract/sandbox-provider.js'
import type { SessionManagerEvents } from '../contract/session-manager-types.js'
import type { SessionRecord, TurnManifest } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import { filesToLeave } from './file-steps.js'
import { reviseMarkerLoss } from './marker-verdict.js'
import type { ResumeAttempt } from './resume-attempt.js'
import type { Climbed } from './resume-ladder.js'
import type { TurnScope } from './scope.js'

/** What the assessment needs besides the ladder's result. */
export interface AssessInput {
  /** The ladder's sandbox as the turn uses it: watched for calls that may change its process list. */
  handle: SandboxHandle
  /** The manifest on the record the lease returned: what a turn end builds on while the sandbox is the same. */
  acquiredManifest: TurnManifest | null
  /** The lease's store call, ms. */
  storeMs: number
  /** The ladder's provider calls, ms. */
  connectMs: number
  /** What `totalMs` counts from (`performance.now()`): beginTurn, or a lazy turn's first use. */
  since: number
  /** Takes the turn's first code cell when one was offered to carry the probes (fidelity-carried.ts). */
  takeFirstCall?: () => FirstCall | undefined
  /**
   * The turn's ledger, on which the steps note what the turn end needs as they establish it (contexts code
   * ran in, what the probes found intact), so that it is kept when a later step fails.
   */
  notes: AssessmentNotes
}

/** What the assessment notes on the turn's ledger as it goes (kept when a later step fails). */
export interface AssessmentNotes {
  /** Interpreter contexts the bootstrap or a replay ran code in. */
  noteContexts(contexts: readonly UsedContext[]): void
  /** What the built-in probes found intact, and the process list they read (or knew to be empty). */
  noteProbed(verified: VerifiedState, processesAtResume: readonly ProcessInfo[] | undefined): void
}

/** A call the turn's first use offered to carry the built-in probes: a code cell or a command. */
interface OfferedCall<R, O> {
  /** The call's options, the turn's signal included. */
  options: O
  /**
   * Settles the caller's call: its result (or a promise of it, which may reject with the call's error) when
   * the resume ran it, undefined when it did not (the caller runs it once the resume is over).
   */
  settle(result: R | Promise<R> | undefined): void
}

/** The turn's first call, offered to carry the built-in probes (fidelity-carried*.ts). */
export type FirstCall =
  | ({ kind: 'code'; code: string } & OfferedCall<CodeResult, RunCodeOptions>)
  | ({ kind: 'command'; command: string } & OfferedCall<CommandResult, RunCommandOptions>)
  | FirstRead

/**
 * A file read offered as the turn's first call (readFile, listDir, exists): it goes alongside the probes, and
 * its answer stands once they say the files were kept (carried-read.ts).
 */
export interface FirstRead {
  kind: 'read'
  /** Sends the read to the resumed sandbox. */
  read(handle: SandboxHandle): Promise<unknown>
  /**
   * The read's answer (or a promise of it); undefined when the files were lost (the caller reads again).
   * `replayFollows`: a journal replay comes next, which the answer does not wait for (the report does).
   */
  settle(result: Promise<unknown> | undefined, after?: { replayFollows: boolean }): void
}

/**
 * What the assessment leaves for the turn and its end. Returned, never thrown: when a step fails, `failure`
 * holds its error and the rest is what the steps before it established (the turn end still writes the
 * manifest for, releases and pauses the sandbox in `handle`).
 */
export interface Assessed {
  /** The sandbox the turn uses (`input.handle`). */
  readonly handle: SandboxHandle
  /** The manifest the turn end builds on: null for a fresh sandbox. */
  readonly manifestBase: TurnManifest | null
  /** The report; undefined when a step before it failed. */
  readonly report: ResumeReport | undefined
  /** When the sandbox was ready (the report made), `performance.now()`; 0 before. */
  readonly readyAt: number
  /** Why the assessment did not pass: HEALTH_CHECK_FAILED (the report is there), or the error of a step. */
  readonly failure: { error: unknown } | undefined
}

/** What a journal replay did, for the report. */
interface Replayed {
  readonly rehydratedSteps: number
  readonly rehydrateFailures?: RehydrateFailures
  /** Paths a replay left as the sandbox had them instead of writing the journal's version. */
  readonly keptFiles?: string[]
}

/** What the restore step found and did: the survival flags, the built-in probes' results, the replay. */
interface Restored extends Replayed {
  readonly survived: ResumeReport['survived']
  readonly checks: readonly HealthCheckResult[]
  readonly stateLost: boolean
  readonly rehydrateMs: number
  /** The process list the fidelity probe read, for the declared process checks. */
  readonly processList?: ProcessInfo[]
  readonly processesRestarted: boolean
}

/**
 * Everything after the ladder: set up a fresh sandbox (bootstrap, journal replay) or probe what survived the
 * pause and rehydrate what did not, run the declared checks, make the report. A required check that still
 * fails is `failure` HEALTH_CHECK_FAILED, with the report.
 */
export async function assess(
  scope: TurnScope,
  climbed: Climbed,
  attempt: ResumeAttempt,
  input: AssessInput,
): Promise<Assessed> {
  const { handle } = input
  const manifestBase = startsFresh(climbed) ? null : input.acquiredManifest
  const assessed = (rest: Pick<Assessed, 'report' | 'readyAt' | 'failure'>): Assessed => ({
    handle,
    manifestBase,
    ...rest,
  })
  try {
    const report = await check(scope, climbed, handle, attempt, input)
    const readyAt = performance.now()
    const failed = requiredFailure(scope.key, report)
    return assessed({ report, readyAt, failure: failed ? { error: failed } : undefined })
  } catch (error) {
    return assessed({ report: undefined, readyAt: 0, failure: { error } })
  }
}

/** Restore, declared checks, `health-check` events, the report. */
async function check(
  scope: TurnScope,
  climbed: Climbed,
  handle: SandboxHandle,
  attempt: ResumeAttempt,
  input: AssessInput,
): Promise<ResumeReport> {
  const { ctx, key } = scope
  const { events } = ctx
  const { outcome } = climbed
  const healthStarted = performance.now()
  // The built-in declared probes only read (a port probe's command leaves no process behind): they go to
  // the ladder's handle, not the watched one.
  const early = firstProbes(scope, climbed, {
    sandbox: handle,
    probeSandbox: climbed.handle,
    signal: attempt.signal,
  })
  const restored = await restore(scope, climbed, handle, input)
  const checks = [
    ...restored.checks,
    ...(await declaredChecks(scope, climbed, handle, attempt, restored, early)),
  ]
  const healthMs = performance.now() - healthStarted - restored.rehydrateMs
  for (const result of checks) {
    events.emit('health-check', {
      conversationId: key.conversationId,
      tenant: key.tenant,
      sandboxId: handle.id,
      result,
    })
  }
  return {
    conversationId: key.conversationId,
    tenant: key.tenant,
    sandboxId: handle.id,
    ...(climbed.previousSandboxId !== undefined ? { previousSandboxId: climbed.previousSandboxId } : {}),
    outcome,
    timings: {
      storeMs: input.storeMs,
      connectMs: input.connectMs,
      healthMs: Math.max(0, healthMs),
      rehydrateMs: restored.rehydrateMs,
      totalMs: performance.now() - input.since,
    },
    survived: restored.survived,
    checks,
    stateLost: restored.stateLost,
    retries: attempt.retries,
    rehydratedSteps: restored.rehydratedSteps,
    ...(restored.rehydrateFailures ? { rehydrateFailures: restored.rehydrateFailures } : {}),
    ...(restored.keptFiles ? { keptFiles: restored.keptFiles } : {}),
    ...(climbed.restored ? { restored: climbed.restored } : {}),
  }
}

/** The declared checks after the restore: skipped on a brand-new sandbox, else run (with the first probes). */
async function declaredChecks(
  scope: TurnScope,
  climbed: Climbed,
  handle: SandboxHandle,
  attempt: ResumeAttempt,
  restored: Restored,
  early: Promise<FirstProbes> | undefined,
): Promise<HealthCheckResult[]> {
  const { config } = scope.ctx
  if (climbed.outcome === 'created') return skippedChecks(scope)
  if (config.healthChecks.length === 0) return []
  // First probes made alongside the built-in ones say nothing once something was lost or replayed.
  const first = early && nothingLost(restored) ? await early : undefined
  return runDeclaredChecks(config.healthChecks, {
    sandbox: handle,
    probeSandbox: climbed.handle,
    signal: attempt.signal,
    ...(restored.processList ? { processList: restored.processList } : {}),
    processesRestarted: restored.processesRestarted,
    ...(first ? { firstProbes: first } : {}),
  })
}

/**
 * A sandbox that holds nothing of the conversation yet: created, recreated, or restored from the journal
 * alone (no snapshot, or a lost one). The assessment bootstraps it and replays the whole journal.
 */
function startsFresh(climbed: Climbed): boolean {
  return (
    climbed.outcome === 'created' || climbed.outcome === 'recreated' || climbed.restored?.source === 'journal'
  )
}

/**
 * The declared checks' first probes of a sandbox that resumed, sent side by side with the built-in probes
 * (restore), so that a resume where nothing was lost pays one round trip for all of them. The process checks
 * read the built-in probe's process list when it reads one, so they join only when it does not.
 */
function firstProbes(
  scope: TurnScope,
  climbed: Climbed,
  handles: { sandbox: SandboxHandle; probeSandbox: SandboxHandle; signal: AbortSignal },
): Promise<FirstProbes> | undefined {
  const { config } = scope.ctx
  const { record } = climbed
  if (startsFresh(climbed) || climbed.restored || config.healthChecks.length === 0) return undefined
  const probesList = config.fidelityProbes && (record?.manifest?.processes?.length ?? 0) > 0
  return probeDeclaredChecks(config.healthChecks, { ...handles, listProcesses: !probesList })
}

/** Nothing lost, replayed or restarted: what the sandbox answered before the restore still holds. */
function nothingLost(restored: Restored): boolean {
  return (
    !restored.stateLost &&
    restored.rehydratedSteps === 0 &&
    !restored.processesRestarted &&
    restored.survived.processes !== false
  )
}

/** HEALTH_CHECK_FAILED when a required check still failed after its repair. */
function requiredFailure(key: SessionKey, report: ResumeReport): SandkeepError | undefined {
  const failed = report.checks.filter((c) => c.required && c.status === 'failed')
  if (failed.length === 0) return undefined
  return new SandkeepError({
    code: 'HEALTH_CHECK_FAILED',
    message: `Required health check(s) ${failed.map((c) => `'${c.name}' (${c.message ?? 'failed'})`).join(', ')} still failed after repair.`,
    tenant: key.tenant,
    conversationId: key.conversationId,
    sandboxId: report.sandboxId,
  })
}

/** A brand-new sandbox has nothing to check yet (bootstrap sets it up); the turn itself starts servers. */
function skippedChecks(scope: TurnScope): HealthCheckResult[] {
  return scope.ctx.config.healthChecks.map((check) => ({
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
  scope: TurnScope,
  climbed: Climbed,
  handle: SandboxHandle,
  input: AssessInput,
): Promise<Restored> {
  const { config } = scope.ctx
  const { record } = climbed
  const created = startsFresh(climbed)
  const base = nothingRestored(climbed)
  // A sandbox another turn (re)created meanwhile is that turn's to bootstrap and rehydrate.
  if (created && !climbed.adopted) return setUpFresh(scope, climbed, handle, input.notes, base)
  if (config.fidelityProbes && record?.manifest && !created)
    return probeAndRehydrate(scope, handle, record, base, input)
  if (climbed.restored && !climbed.adopted)
    return rebuildUnprobedMemory(scope, climbed, handle, input.notes, base)
  return base
}

/** What the report says before any restore step ran (a fresh sandbox other than a creation lost everything). */
function nothingRestored(climbed: Climbed): Restored {
  const lostAll = startsFresh(climbed) && climbed.outcome !== 'created'
  return {
    survived: lostAll
      ? { memory: false, filesystem: false, processes: false }
      : { memory: null, filesystem: null, processes: null },
    checks: [],
    // A restore from the journal alone rebuilds only what was recorded, as a recreate does.
    stateLost: lostAll || climbed.sessionLost,
    rehydratedSteps: 0,
    rehydrateMs: 0,
    processesRestarted: false,
  }
}

/** A fresh sandbox: the bootstrap, then (with `rehydrate: 'journal'`) the whole journal. */
async function setUpFresh(
  scope: TurnScope,
  climbed: Climbed,
  handle: SandboxHandle,
  notes: AssessmentNotes,
  base: Restored,
): Promise<Restored> {
  const started = performance.now()
  await runBootstrap(scope, handle, notes)
  const replayed =
    scope.ctx.config.rehydrate === 'journal'
      ? await replayJournal(scope, handle, notes, replayReason(climbed))
      : NOTHING_REPLAYED
  return { ...base, ...replayed, rehydrateMs: performance.now() - started }
}

/** Why a fresh sandbox's journal is replayed. */
function replayReason(climbed: Climbed): 'created' | 'recreated' | 'rewound' | 'forked' {
  const { outcome } = climbed
  return outcome === 'rewound' || outcome === 'forked'
    ? outcome
    : outcome === 'created'
      ? 'created'
      : 'recreated'
}

/**
 * A sandbox made from a snapshot with nothing to probe it against (fidelity probes off, or a checkpoint
 * without a manifest): the snapshot's files are the checkpoint's; memory it did not keep is rebuilt from
 * the journal's code steps.
 */
async function rebuildUnprobedMemory(
  scope: TurnScope,
  climbed: Climbed,
  handle: SandboxHandle,
  notes: AssessmentNotes,
  base: Restored,
): Promise<Restored> {
  const { config, provider } = scope.ctx
  if (provider.snapshotKeeps?.memory === true) return base
  const lost: Restored = {
    ...base,
    survived: { memory: false, filesystem: true, processes: false },
    stateLost: true,
  }
  if (config.rehydrate !== 'journal') return lost
  const started = performance.now()
  const reason = climbed.outcome === 'forked' ? 'forked' : 'rewound'
  const replayed = await replayJournal(scope, handle, notes, reason, { codeOnly: true, keepFiles: true })
  return { ...lost, ...replayed, rehydrateMs: base.rehydrateMs + performance.now() - started }
}

/** The built-in probes against the manifest the previous turn left; lost memory or files → journal replay. */
async function probeAndRehydrate(
  scope: TurnScope,
  handle: SandboxHandle,
  record: SessionRecord,
  base: Restored,
  input: AssessInput,
): Promise<Restored> {
  const { config } = scope.ctx
  const { takeFirstCall, notes } = input
  const manifest = record.manifest!
  // Declared checks have probes of their own to send: the first call carries the built-in ones only alone.
  const call = takeFirstCall && config.healthChecks.length === 0 ? await firstCall(takeFirstCall) : undefined
  const read = call?.kind === 'read' ? sendAlongside(handle, call) : undefined
  let fidelity: FidelityOutcome
  try {
    const carried = call && call.kind !== 'read' ? await carryOrDecline(handle, manifest, call) : undefined
    const probed = carried ?? (await probeFidelity({ ...engineScope(scope, handle), manifest }))
    fidelity = await reviseMarkerLoss(handle, manifest, probed, scope.signal)
  } catch (error) {
    read?.decide(false)
    throw error
  }
  // Files kept (or not known lost: nothing repairs them): the read answered what the caller would read now.
  const lost = fidelity.survived.memory === false || fidelity.survived.filesystem === false
  read?.decide(fidelity.survived.filesystem !== false, lost && config.rehydrate === 'journal')
  // What the turn end need not write again: sentinels and the marker found intact, and the process
  // list (read now, or known empty: none was recorded for this very sandbox and none can appear alone).
  notes.noteProbed(
    { contexts: fidelity.keptContexts, marker: fidelity.markerKept },
    fidelity.processList ??
      (manifest.sandboxId === handle.id && manifest.processes?.length === 0 ? [] : undefined),
  )
  const found: Restored = {
    ...base,
    survived: fidelity.survived,
    checks: fidelity.checks,
    ...(fidelity.processList ? { processList: fidelity.processList } : {}),
    processesRestarted: fidelity.processesRestarted,
  }
  if (fidelity.survived.memory !== false && fidelity.survived.filesystem !== false) return found
  if (config.rehydrate !== 'journal') return { ...found, stateLost: true }
  const started = performance.now()
  // Files survived: commands and file writes left their effects on disk, so only code runs again.
  const codeOnly = fidelity.survived.filesystem === true
  const reason = fidelity.survived.memory === false ? 'memory-lost' : 'filesystem-lost'
  // The sandbox is the one the conversation used: a file there may be newer than the journal's.
  const replayed = await replayJournal(scope, handle, notes, reason, { codeOnly, keepFiles: true })
  const rehydrateMs = performance.now() - started
  return {
    ...found,
    ...replayed,
    stateLost: true,
    rehydrateMs: base.rehydrateMs + rehydrateMs,
    checks: fidelity.checks.map((check) => repairedByReplay(check, replayed, rehydrateMs)),
  }
}

/** The memory probe's result once a replay without failures rebuilt the memory it found lost. */
function repairedByReplay(check: HealthCheckResult, replayed: Replayed, repairMs: number): HealthCheckResult {
  const { rehydratedSteps: steps } = replayed
  if (check.name !== 'memory' || check.status !== 'failed' || steps === 0 || replayed.rehydrateFailures)
    return check
  return {
    ...check,
    status: 'repaired',
    repairMs,
    message: `${check.message}; rehydrated from the journal (${steps} steps)`,
  }
}

/**
 * The built-in probes carried by the turn's first code cell, when it offered one: the probes' outcome when the
 * cell's first line found everything kept (the caller gets the cell's result), undefined otherwise (the
 * full probes decide; the caller's cell runs again after the repair when none of it ran, else the caller gets
 * what it answered).
 */
async function carryProbes(
  handle: SandboxHandle,
  plan: CarryPlan,
  call: Exclude<FirstCall, FirstRead>,
): Promise<FidelityOutcome | undefined> {
  const started = performance.now()
  let verdict: CarriedVerdict
  if (call.kind === 'code') {
    const run = runCarried(handle, plan, call.code, call.options)
    verdict = await run.verdict
    call.settle(verdict === 'not-kept' ? undefined : run.result)
  } else {
    // The turn offers a command only when the plan has a marker to test (turn.ts).
    if (!plan.marker) {
      call.settle(undefined)
      return undefined
    }
    const run = runCarriedCommand(handle, { ...plan, marker: plan.marker }, call.command, call.options)
    // The command ran on kept files (or may have): the caller has it now, the sentinel's verdict after.
    const files = await run.files
    call.settle(files === 'not-kept' ? undefined : run.result)
    verdict = files === 'not-kept' ? files : await run.verdict
  }
  return verdict === 'kept' ? keptOutcome(plan, performance.now() - started) : undefined
}

/** {@link carryProbes} when one line can answer the manifest's probes; else the call runs after the resume. */
function carryOrDecline(
  handle: SandboxHandle,
  manifest: TurnManifest,
  call: Exclude<FirstCall, FirstRead>,
): Promise<FidelityOutcome | undefined> {
  const plan = carryPlan(manifest)
  if (plan) return carryProbes(handle, plan, call)
  call.settle(undefined)
  return Promise.resolve(undefined)
}

/** The turn's first call, when one was offered. */
async function firstCall(
  takeFirstCall: NonNullable<AssessInput['takeFirstCall']>,
): Promise<FirstCall | undefined> {
  // A call that began the resume offers itself just after beginTurn returned: give it that moment.
  const call = takeFirstCall()
  if (call) return call
  await new Promise((resolve) => setImmediate(resolve))
  return takeFirstCall()
}

/**
 * Sends the offered read now, beside the probes. `decide(true, …)` hands the caller its answer; `decide(false)`
 * drops it (the files were lost, or the probes failed): the caller reads again once the resume is over, on
 * the repaired sandbox. Only the first decision counts.
 */
function sendAlongside(
  handle: SandboxHandle,
  call: FirstRead,
): { decide(kept: boolean, replayFollows?: boolean): void } {
  const answer = call.read(handle)
  answer.catch(() => {})
  let decided = false
  return {
    decide(kept, replayFollows = false) {
      if (decided) return
      decided = true
      call.settle(kept ? answer : undefined, { replayFollows })
    },
  }
}

async function runBootstrap(scope: TurnScope, handle: SandboxHandle, notes: AssessmentNotes): Promise<void> {
  const bootstrap = scope.ctx.config.bootstrap
  if (bootstrap === undefined) return
  if (typeof bootstrap === 'function') {
    await bootstrap(handle)
    return
  }
  const outcome = await replaySteps(engineScope(scope, handle), bootstrap)
  notes.noteContexts(outcome.contexts)
}

/** How a journal replay runs. */
interface ReplayRule {
  /** Only the code steps (the files were kept). */
  codeOnly?: boolean
  /** The sandbox is not new: a file step never replaces a file that is there (see file-steps.ts). */
  keepFiles?: boolean
}

const NOTHING_REPLAYED: Replayed = { rehydratedSteps: 0 }

/**
 * Replays the journal by `rule`: a failing step is reported (`rehydrateFailures`, an `error` event) and the
 * steps after it still run; a file kept as the sandbox has it is named (`keptFiles`).
 */
async function replayJournal(
  scope: TurnScope,
  handle: SandboxHandle,
  notes: AssessmentNotes,
  reason: SessionManagerEvents['rehydrate']['reason'],
  rule: ReplayRule = {},
): Promise<Replayed> {
  const { ctx, key, signal } = scope
  const started = performance.now()
  const journal = (await ctx.store.readJournal(key)).map((entry) => entry.step)
  // Positions in the journal, so a failure names the step the way `turn.journal.list()` numbers it.
  let positions = journal.flatMap((step, index) =>
    !rule.codeOnly || step.kind === 'code' ? [index + 1] : [],
  )
  if (positions.length === 0) return NOTHING_REPLAYED
  let keptFiles: string[] = []
  if (rule.keepFiles) {
    try {
      const files = await filesToLeave(
        handle,
        positions.map((position) => journal[position - 1]!),
        signal,
      )
      keptFiles = files.kept
      positions = positions.filter((position) => {
        const step = journal[position - 1]!
        return step.kind !== 'file' || !files.leave.has(step.path)
      })
    } catch (error) {
      // Nothing is replayed over files that could not be looked at; the report still says state was lost.
      if (signal.aborted) throw error
      ctx.emitError('rehydrate', error, key)
      return NOTHING_REPLAYED
    }
  }
  const kept = keptFiles.length > 0 ? { keptFiles } : {}
  const steps = positions.map((position) => journal[position - 1]!)
  let outcome: ReplayOutcome
  try {
    outcome = await replaySteps(engineScope(scope, handle), steps, 'continue')
  } catch (error) {
    // Only an abort is thrown by a continuing replay.
    if (signal.aborted) throw error
    ctx.emitError('rehydrate', error, key)
    return { ...NOTHING_REPLAYED, ...kept }
  }
  notes.noteContexts(outcome.contexts)
  const failures = outcome.failures.map((failure) => ({ ...failure, step: positions[failure.step - 1]! }))
  const failed =
    outcome.failed > 0
      ? { rehydrateFailures: { count: outcome.failed, skipped: outcome.skipped, steps: failures } }
      : {}
  // The turn goes on with what could be restored; the report says which steps failed, the event says why.
  if (outcome.failed > 0) ctx.emitError('rehydrate', replayFailedError(handle, outcome, failures), key)
  ctx.events.emit('rehydrate', {
    conversationId: key.conversationId,
    tenant: key.tenant,
    sandboxId: handle.id,
    steps: outcome.steps,
    failed: outcome.failed,
    ms: performance.now() - started,
    reason,
    ...kept,
  })
  return { rehydratedSteps: outcome.steps, ...failed, ...kept }
}

/** The assessment engine's scope for `sandbox`: the turn's signal and connect's retry policy, no manager types. */
function engineScope(scope: TurnScope, sandbox: SandboxHandle): AssessmentScope {
  return { sandbox, signal: scope.signal, retry: scope.ctx.config.retry }
}
