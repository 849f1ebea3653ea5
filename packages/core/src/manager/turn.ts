import { SandkeepError } from '../errors.js'
import type { UsedContext } from '../fidelity.js'
import { carryPlan } from '../fidelity-carried.js'
import { writeManifest } from '../fidelity-manifest.js'
import { contentDigest } from '../file-digests.js'
import type { JournalStep } from '../journal.js'
import { validateJournalStep } from '../rehydrate.js'
import type { ResumeReport, TurnEndReport } from '../report.js'
import { toSandkeepError } from '../retry.js'
import type { CodeResult, RunCodeOptions, SandboxHandle } from '../sandbox-provider.js'
import type { Turn, TurnJournal } from '../session-manager-types.js'
import type { AcquireResult, Checkpoint, FileWitness, TurnManifest } from '../session-store.js'
import type { SessionKey } from '../validation.js'
import { type Assessed, assess, type FirstCodeCall } from './assess.js'
import type { LastTurn } from './caches.js'
import type { ManagerContext } from './context.js'
import { createLeaseKeeper, type LeaseKeeper } from './lease-keeper.js'
import { midTurnCheckpoint } from './mid-turn.js'
import { abortedError } from './records.js'
import { createResumeAttempt, type ResumeAttempt } from './resume-attempt.js'
import { climbLadder, startingPoint } from './resume-ladder.js'
import { storeClock, type TurnScope } from './scope.js'
import type { Speculation } from './speculation.js'
import { finishTurn } from './turn-end.js'
import { createTurnHandle, watchProcessCalls } from './turn-handle.js'

/** Everything a turn is built from: what beginTurn knew and what the lease's acquire returned. */
export interface TurnStart {
  readonly ctx: ManagerContext
  readonly key: SessionKey
  readonly acquired: AcquireResult
  /** `performance.now()` when beginTurn was called. */
  readonly beganAt: number
  /** The acquire's store call, ms. */
  readonly storeMs: number
  /** The caller's abort signal. */
  readonly callerSignal: AbortSignal | undefined
  /** What this process's last turn of the session left, read before the lease was taken. */
  readonly known: LastTurn | undefined
  /** A connect started alongside the lease, used only if the lease's record confirms it. */
  readonly speculation: Speculation | undefined
  /** Resume on first use, and count `totalMs` from then rather than from beginTurn. */
  readonly lazy: boolean
}

/**
 * One turn, built complete from its {@link TurnStart}. It holds the lease keeper (renewal, loss, abort), the
 * handle the user gets and the journal, and runs its phases in order, each given the turn's narrow
 * {@link TurnScope} and the values the phase before it returned: the ladder (resume-ladder.ts) returns the
 * sandbox, the assessment (assess.ts) what the turn end needs, the turn end (turn-end.ts) the end report.
 * What changes while the turn runs (the resume's results, the end, what the user's calls did) is private and
 * assigned here only.
 */
export class TurnImpl implements Turn {
  readonly conversationId: string
  readonly tenant: string
  readonly journal: TurnJournal
  readonly sandbox: SandboxHandle
  readonly #start: TurnStart
  readonly #keeper: LeaseKeeper
  readonly #scope: TurnScope
  /** Interpreter contexts the turn ran code in (the assessment's first), for the manifest's sentinels. */
  readonly #contexts: UsedContext[] = []
  /** Files the turn wrote (its handle's writeFile, journal file steps), oldest first, for the manifest's witnesses. */
  readonly #written: FileWitness[] = []
  #readyPromise: Promise<SandboxHandle> | undefined
  #endPromise: Promise<TurnEndReport> | undefined
  readonly #released = Promise.withResolvers<Checkpoint | undefined>()
  #endReport: TurnEndReport | undefined
  #ended = false
  /** The resume's dealings with the platform, once it began. */
  #attempt: ResumeAttempt | undefined
  /** When the resume started the sandbox running (the create or connect call), epoch ms, store clock; 0 before. */
  #runningSince = 0
  /** The sandbox as the turn uses it, once the ladder got one. */
  #handle: SandboxHandle | undefined
  /** What the assessment left. */
  #assessed: Assessed | undefined
  /** The resume met another tenant's sandbox: the turn end never touches it. */
  #foreign = false
  /** A call that can change the process list ran (start, kill, a command, or the SDK object handed out). */
  #processesMayHaveChanged = false
  /** The caller ran something in the sandbox (a resume alone, even a prewarm, does not count). */
  #used = false
  /** A lazy turn's first code cell, offered to carry the resume's probes; the resume takes or declines it. */
  #firstCall: FirstCodeCall | undefined
  /** True once a cell was offered: only the turn's first call may carry the probes. */
  #offered = false

  constructor(start: TurnStart) {
    const { ctx, key } = start
    this.#start = start
    this.conversationId = key.conversationId
    this.tenant = key.tenant
    this.#keeper = createLeaseKeeper(ctx, key, start.acquired.lease, start.callerSignal)
    this.#scope = {
      ctx,
      key,
      lease: this.#keeper.lease,
      storeNow: storeClock(start.acquired.lease, ctx.config.leaseMs, start.beganAt + start.storeMs),
      signal: this.#keeper.signal,
    }
    this.journal = {
      record: async (step: JournalStep) => {
        this.#assertLive()
        const checked = validateJournalStep(step)
        await ctx.store.appendJournal(key, checked, { ttlMs: ctx.config.ttlMs, lease: this.#keeper.lease() })
        // A recorded file step describes a file the turn wrote.
        if (checked.kind === 'file') this.#trackWrite(checked.path, checked.content)
      },
      list: async () => (await ctx.store.readJournal(key)).map((entry) => entry.step),
    }
    this.sandbox = createTurnHandle({
      key,
      provider: ctx.provider,
      signal: this.#keeper.signal,
      assertLive: () => this.#assertLive(),
      ready: () => this.ready(),
      resumed: () => this.#handle,
      leaseLost: () => this.#keeper.lost,
      noteUse: () => {
        this.#used = true
      },
      trackContext: (language, contextId) =>
        this.#trackContext({ language: language ?? 'python', contextId: contextId ?? null }),
      trackWrite: (path, data) => this.#trackWrite(path, data),
      carryFirstCode: (code, options) => this.#carryFirstCode(code, options),
    })
  }

  /**
   * The first code cell of a lazy turn whose resume has not assessed the sandbox yet, in the default Python
   * context: offered to the resume (which starts now if it has not), so that it carries the probes.
   */
  #carryFirstCode(code: string, options: RunCodeOptions): Promise<CodeResult | undefined> | undefined {
    const { ctx } = this.#start
    if (this.#offered || this.#assessed || this.#ended || !ctx.config.fidelityProbes) return undefined
    if ((options.language ?? 'python') !== 'python' || options.contextId !== undefined) return undefined
    // Only a turn whose resume waits for its first use, or is still under way.
    if (!this.#start.lazy && !this.#readyPromise) return undefined
    // Only where the resume will probe a mapped sandbox with nothing but the built-in probes (a pending
    // restore starts a new sandbox): a cell the resume cannot take would only wait for it.
    const record = this.#start.acquired.record
    if (!record?.sandboxId || !record.manifest || record.restore || ctx.config.healthChecks.length > 0)
      return undefined
    if (!carryPlan(record.manifest)) return undefined
    this.#offered = true
    const outcome = Promise.withResolvers<CodeResult | undefined>()
    this.#firstCall = { code, options, settle: outcome.resolve }
    this.ready().catch(() => undefined)
    return outcome.promise
  }

  /** Takes the offered first cell (once). */
  #takeFirstCall(): FirstCodeCall | undefined {
    const call = this.#firstCall
    this.#firstCall = undefined
    return call
  }

  get report(): ResumeReport | undefined {
    return this.#assessed?.report
  }

  get checkpointed(): Promise<Checkpoint | undefined> {
    return this.#released.promise
  }

  async checkpoint(): Promise<Checkpoint> {
    this.#assertLive()
    const handle = await this.ready()
    this.#assertLive()
    const current = this.#handle ?? handle
    return midTurnCheckpoint(this.#scope, current, { manifest: () => this.#manifestNow(current) })
  }

  /**
   * The manifest of the sandbox as it is now (with fidelity probes on), for a mid-turn checkpoint; null when
   * the probes are off or the manifest could not be written (reported as phase `manifest`): a restore to it
   * then rebuilds memory from the journal.
   */
  async #manifestNow(handle: SandboxHandle): Promise<TurnManifest | null> {
    const assessed = this.#assessed
    const { ctx, key } = this.#start
    if (!assessed || !ctx.config.fidelityProbes) return null
    try {
      return await writeManifest(
        handle,
        this.#contexts,
        assessed.manifestBase,
        assessed.verified,
        this.#keeper.signal,
        undefined,
        this.#written,
      )
    } catch (cause) {
      ctx.emitError('manifest', cause, key)
      return null
    }
  }

  get endReport(): TurnEndReport | undefined {
    return this.#endReport
  }

  get signal(): AbortSignal {
    return this.#keeper.signal
  }

  get started(): boolean {
    return this.report !== undefined
  }

  /** @throws SandkeepError LEASE_LOST after a renewal found the lease gone, TURN_ENDED after the end */
  #assertLive(): void {
    const lost = this.#keeper.lost
    if (lost && !this.#ended) throw lost
    if (this.#ended) {
      throw new SandkeepError({
        code: 'TURN_ENDED',
        message: 'This turn has ended; begin a new turn to use the sandbox again.',
        tenant: this.tenant,
        conversationId: this.conversationId,
      })
    }
  }

  #trackContext(entry: UsedContext): void {
    if (!this.#contexts.some((c) => c.language === entry.language && c.contextId === entry.contextId)) {
      this.#contexts.push(entry)
    }
  }

  #trackWrite(path: string, data: string | Uint8Array): void {
    // An empty file proves little (any template may hold one); one too large to digest cheaply is left out.
    const sha256 = data.length === 0 ? undefined : contentDigest(data)
    const at = this.#written.findIndex((w) => w.path === path)
    if (at >= 0) this.#written.splice(at, 1)
    if (sha256) this.#written.push({ path, sha256 })
  }

  ready(): Promise<SandboxHandle> {
    if (this.#ended) {
      return Promise.reject(
        new SandkeepError({
          code: 'TURN_ENDED',
          message: 'This turn has ended.',
          tenant: this.tenant,
          conversationId: this.conversationId,
        }),
      )
    }
    const { ctx, key } = this.#start
    // The resume runs inside its `sandkeep.resume` span (a plain call when tracing is off).
    this.#readyPromise ??= ctx.telemetry.tracer
      .resume(this, () =>
        this.#resume().finally(() => {
          // An offered cell the resume did not take runs as usual, now that the resume is over.
          this.#takeFirstCall()?.settle(undefined)
        }),
      )
      .then(
        () => this.sandbox,
        (error: unknown) => {
          const failure = this.#keeper.lost ?? toSandkeepError(error, this.#keeper.signal)
          // Never pause, kill or otherwise touch another tenant's sandbox at the end of this turn.
          if (failure.code === 'TENANT_MISMATCH') this.#foreign = true
          ctx.emitError('resume', failure, key)
          throw failure
        },
      )
    return this.#readyPromise
  }

  /** The resume: climb the ladder to a sandbox, then assess it and make the report. */
  async #resume(): Promise<void> {
    const scope = this.#scope
    const { ctx, key, acquired, known, speculation } = this.#start
    if (scope.signal.aborted) throw abortedError(key, scope.signal.reason)
    const resumeStarted = performance.now()
    const attempt = createResumeAttempt(ctx, scope.signal)
    this.#attempt = attempt
    const start = await startingPoint(scope, acquired)
    const connectStarted = performance.now()
    // The sandbox runs (and costs) from the resume call on, not only once it is ready.
    this.#runningSince = scope.storeNow()
    const climbed = await climbLadder(
      scope,
      { ...start, holders: acquired.holders, known, speculation },
      attempt,
    )
    const connectMs = performance.now() - connectStarted
    const handle = watchProcessCalls(climbed.handle, () => {
      this.#processesMayHaveChanged = true
    })
    this.#handle = handle
    const assessed = await assess(scope, climbed, attempt, {
      handle,
      acquiredManifest: acquired.record?.manifest ?? null,
      storeMs: this.#start.storeMs,
      connectMs,
      // A lazy turn counts from its first use; an eager one from beginTurn.
      since: this.#start.lazy ? resumeStarted : this.#start.beganAt,
      takeFirstCall: () => this.#takeFirstCall(),
    })
    this.#assessed = assessed
    for (const context of assessed.contexts) this.#trackContext(context)
    if (assessed.report) {
      ctx.events.emit('resume-end', {
        conversationId: key.conversationId,
        tenant: key.tenant,
        report: assessed.report,
      })
    }
    if (assessed.failure) throw assessed.failure.error
  }

  end(): Promise<TurnEndReport> {
    this.#endPromise ??= this.#start.ctx.telemetry.tracer.within(this, () => this.#end())
    return this.#endPromise
  }

  /**
   * Stops following the caller's signal, waits for a resume in flight, runs the turn end (the lease is kept
   * renewed through it: a release may hold the session while the sandbox pauses), then stops the lease
   * keeping, aborts and says so.
   */
  async #end(): Promise<TurnEndReport> {
    const { ctx, key, acquired, speculation } = this.#start
    this.#keeper.detach()
    // Wait for a resume in flight so its sandbox is paused too; its failure was already reported.
    if (this.#readyPromise) await this.#readyPromise.catch(() => undefined)
    this.#ended = true
    this.#keeper.releasing()
    const endReport = await finishTurn(this.#scope, {
      acquiredTurnCount: acquired.record?.turnCount,
      assessed: this.#assessed,
      touched: this.#attempt?.touched ?? null,
      runningSince: this.#runningSince,
      resumedFromPausedAt: this.#attempt?.resumedFromPausedAt ?? null,
      foreign: this.#foreign,
      speculation,
      contexts: this.#contexts,
      written: this.#written,
      abandoned: this.#attempt?.abandoned(),
      processesMayHaveChanged: this.#processesMayHaveChanged,
      used: this.#used,
      onReleased: this.#released.resolve,
    })
    this.#keeper.stop()
    this.#endReport = endReport
    this.#keeper.abort(
      new SandkeepError({
        code: 'TURN_ENDED',
        message: 'The turn ended.',
        tenant: key.tenant,
        conversationId: key.conversationId,
      }),
    )
    ctx.events.emit('turn-end', {
      conversationId: key.conversationId,
      tenant: key.tenant,
      report: this.report,
      end: endReport,
    })
    return endReport
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.end().then(() => undefined)
  }
}
