import { SandkeepError } from '../errors.js'
import type { UsedContext } from '../fidelity.js'
import type { VerifiedState } from '../fidelity-manifest.js'
import type { JournalStep } from '../journal.js'
import { validateJournalStep } from '../rehydrate.js'
import type { ResumeReport, TurnEndReport } from '../report.js'
import { toSandkeepError } from '../retry.js'
import type { ProcessInfo, SandboxHandle } from '../sandbox-provider.js'
import type { Turn, TurnJournal } from '../session-manager-types.js'
import type { AcquireResult, Lease, TurnManifest } from '../session-store.js'
import type { SessionKey } from '../validation.js'
import { assess } from './assess.js'
import type { LastTurn } from './caches.js'
import type { ManagerContext } from './context.js'
import { abortedError } from './records.js'
import { climbLadder, startingPoint } from './resume-ladder.js'
import type { Speculation } from './speculation.js'
import { finishTurn } from './turn-end.js'
import { createTurnHandle } from './turn-handle.js'

/** A provider call of the resume, retried and counted for `report.retries`. */
export interface ResumeCalls {
  readonly signal: AbortSignal
  retries: number
  onRetry(): void
  call<T>(operation: () => Promise<T>): Promise<T>
}

/**
 * One turn: holds the lease (renewed in the background), the handle the user gets, the journal, the abort
 * signal. Its phases live in their own modules: the resume ladder (resume-ladder.ts), the assessment of what
 * survived (assess.ts) and the turn end (turn-end.ts); they read and set the fields below, which are not part
 * of the public `Turn` type.
 */
export class TurnImpl implements Turn {
  readonly conversationId: string
  readonly tenant: string
  readonly holderId: string
  readonly journal: TurnJournal
  readonly sandbox: SandboxHandle
  report: ResumeReport | undefined
  endReport: TurnEndReport | undefined
  readonly ctx: ManagerContext
  readonly key: SessionKey
  readonly controller = new AbortController()
  lease: Lease
  readonly acquired: AcquireResult
  readonly beganAt: number
  readonly storeMs: number
  readyPromise: Promise<SandboxHandle> | undefined
  private endPromise: Promise<TurnEndReport> | undefined
  /** The provider's handle (wrapped by watchProcessCalls) once the resume got one. */
  handle: SandboxHandle | undefined
  readyAt = 0
  /** When this turn started the sandbox running (the create or connect call), epoch ms; 0 before. */
  runningSince = 0
  resumedFromPausedAt: number | null = null
  ended = false
  /** Set when the resume met another tenant's sandbox: the turn end never touches it. */
  foreign = false
  /** A sandbox this turn asked the provider to connect to: it may be running even if the resume failed. */
  touched: string | null = null
  private renewTimer: NodeJS.Timeout | undefined
  /** Set when a renewal found the lease gone: every later sandbox call of this turn fails with it. */
  leaseLost: SandkeepError | undefined
  private detachCallerSignal: (() => void) | undefined
  readonly contexts: UsedContext[] = []
  verified: VerifiedState = { contexts: [], marker: false }
  manifestBase: TurnManifest | null
  /** The process list the resume read from this sandbox (or knew to be empty), for the turn end to reuse. */
  processesAtResume: readonly ProcessInfo[] | undefined
  /** Set by any call that can change the process list: start, kill, a command, or the SDK object handed out. */
  processesMayHaveChanged = false
  /** A connect started alongside the lease, used only if the lease's record confirms it. */
  speculation: Speculation | undefined
  /** What this process's last turn of the session left, read before the lease was taken. */
  known: LastTurn | undefined
  /** Set when the store had no record of a session this process had used: its journal and manifest are gone. */
  sessionLost = false
  /** Set when this turn joined a sandbox another turn (re)created meanwhile, instead of its own. */
  adopted = false
  /** Set by beginTurn for lazy turns, so `totalMs` counts from the first use rather than from beginTurn. */
  lazyStart = false

  constructor(
    ctx: ManagerContext,
    key: SessionKey,
    acquired: AcquireResult,
    beganAt: number,
    storeMs: number,
    signal: AbortSignal | undefined,
  ) {
    this.ctx = ctx
    this.key = key
    this.conversationId = key.conversationId
    this.tenant = key.tenant
    this.acquired = acquired
    this.holderId = acquired.lease.holderId
    this.lease = acquired.lease
    this.beganAt = beganAt
    this.storeMs = storeMs
    this.manifestBase = acquired.record?.manifest ?? null
    this.sandbox = createTurnHandle(this)
    this.journal = {
      record: async (step: JournalStep) => {
        this.assertLive()
        await ctx.store.appendJournal(this.key, validateJournalStep(step), { ttlMs: ctx.config.ttlMs })
      },
      list: async () => (await ctx.store.readJournal(this.key)).map((entry) => entry.step),
    }
    if (signal) {
      if (signal.aborted) this.controller.abort(signal.reason)
      else {
        const onAbort = () => this.controller.abort(signal.reason)
        signal.addEventListener('abort', onAbort, { once: true })
        // A caller's signal may outlive many turns: drop the listener when this turn ends.
        this.detachCallerSignal = () => signal.removeEventListener('abort', onAbort)
      }
    }
    // Renew at a third of the lease so two missed renewals still leave time before it lapses.
    this.renewTimer = setInterval(() => this.renew(), Math.max(100, Math.floor(ctx.config.leaseMs / 3)))
    this.renewTimer.unref()
  }

  get signal(): AbortSignal {
    return this.controller.signal
  }

  get started(): boolean {
    return this.report !== undefined
  }

  private renew(): void {
    const { store, config } = this.ctx
    store.renew(this.key, this.lease, { leaseMs: config.leaseMs, ttlMs: config.ttlMs }).then(
      (lease) => {
        this.lease = lease
      },
      (error: unknown) => {
        // A renewal that crossed the release is expected to find the lease gone.
        if (this.ended) return
        this.ctx.emitError('renew', error, this.key)
        if (SandkeepError.hasCode(error, 'LEASE_LOST')) {
          this.stopRenewal()
          // Another turn may now pause, recreate or remap the sandbox: this turn must stop using it.
          this.leaseLost = new SandkeepError({
            code: 'LEASE_LOST',
            message:
              'This turn lost its lease on the session (it lapsed or was taken over), so it may no longer use the sandbox: end it and begin a new turn.',
            tenant: this.tenant,
            conversationId: this.conversationId,
            cause: error,
          })
          this.controller.abort(this.leaseLost)
        }
      },
    )
  }

  /** Stops the lease renewal and forgets the caller's signal: the first step of the turn end. */
  stopRenewal(): void {
    if (this.renewTimer) clearInterval(this.renewTimer)
    this.renewTimer = undefined
  }

  /** Stops following the caller's abort signal. */
  detachSignal(): void {
    this.detachCallerSignal?.()
  }

  /** @throws SandkeepError LEASE_LOST after a renewal found the lease gone, TURN_ENDED after the end */
  assertLive(): void {
    if (this.leaseLost && !this.ended) throw this.leaseLost
    if (this.ended) {
      throw new SandkeepError({
        code: 'TURN_ENDED',
        message: 'This turn has ended; begin a new turn to use the sandbox again.',
        tenant: this.tenant,
        conversationId: this.conversationId,
      })
    }
  }

  /** Notes an interpreter context the turn used, for the manifest's memory sentinels. */
  trackContext(language: UsedContext['language'] | undefined, contextId: string | undefined): void {
    const entry = { language: language ?? 'python', contextId: contextId ?? null }
    if (!this.contexts.some((c) => c.language === entry.language && c.contextId === entry.contextId)) {
      this.contexts.push(entry)
    }
  }

  ready(): Promise<SandboxHandle> {
    if (this.ended) {
      return Promise.reject(
        new SandkeepError({
          code: 'TURN_ENDED',
          message: 'This turn has ended.',
          tenant: this.tenant,
          conversationId: this.conversationId,
        }),
      )
    }
    // The resume runs inside its `sandkeep.resume` span (a plain call when tracing is off).
    this.readyPromise ??= this.ctx.telemetry.tracer
      .resume(this, () => this.resume())
      .then(
        () => this.sandbox,
        (error: unknown) => {
          const failure = this.leaseLost ?? toSandkeepError(error, this.controller.signal)
          // Never pause, kill or otherwise touch another tenant's sandbox at the end of this turn.
          if (failure.code === 'TENANT_MISMATCH') this.foreign = true
          this.ctx.emitError('resume', failure, this.key)
          throw failure
        },
      )
    return this.readyPromise
  }

  /** The resume: climb the ladder to a sandbox, then assess it and build the report. */
  private async resume(): Promise<void> {
    const signal = this.controller.signal
    if (signal.aborted) throw abortedError(this.key, signal.reason)
    const resumeStarted = performance.now()
    const calls: ResumeCalls = {
      signal,
      retries: 0,
      onRetry: () => {
        calls.retries++
      },
      call: (operation) => this.ctx.call(operation, { signal, onRetry: calls.onRetry }),
    }
    const start = await startingPoint(this)
    const connectStarted = performance.now()
    // The sandbox runs (and costs) from the resume call on, not only once it is ready.
    this.runningSince = Date.now()
    const climbed = await climbLadder(this, start, calls)
    const connectMs = performance.now() - connectStarted
    await assess(this, climbed, calls, { connectMs, resumeStarted })
  }

  end(): Promise<TurnEndReport> {
    this.endPromise ??= this.ctx.telemetry.tracer.within(this, () => finishTurn(this))
    return this.endPromise
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.end().then(() => undefined)
  }
}
