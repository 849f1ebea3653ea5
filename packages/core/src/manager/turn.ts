import { carryPlan } from '../assessment/fidelity-carried.js'
import { validateJournalStep } from '../assessment/rehydrate.js'
import type { JournalStep } from '../contract/journal.js'
import type { ResumeReport, TurnEndReport } from '../contract/report.js'
import { toSandkeepError } from '../contract/retry.js'
import type {
  CodeResult,
  CommandResult,
  RunCodeOptions,
  RunCommandOptions,
  SandboxHandle,
} from '../contract/sandbox-provider.js'
import type { MidTurnCheckpoint, Turn, TurnJournal } from '../contract/session-manager-types.js'
import type { AcquireResult, Checkpoint, TurnManifest } from '../contract/session-store.js'
import { turnEndedError } from '../contract/turn-ended.js'
import type { SessionKey } from '../contract/validation.js'
import { assess, type FirstCall } from './assess.js'
import type { ManagerContext } from './context.js'
import { createLeaseKeeper, type LeaseKeeper } from './lease-keeper.js'
import { midTurnCheckpoint } from './mid-turn.js'
import { abortedError } from './records.js'
import { createResumeAttempt } from './resume-attempt.js'
import { climbLadder, startingPoint } from './resume-ladder.js'
import { storeClock, type TurnScope } from './scope.js'
import type { LastTurn } from './session-state.js'
import { finishTurn, writeTurnManifest } from './turn-end.js'
import { createTurnHandle, watchProcessCalls } from './turn-handle.js'
import { TurnLedger } from './turn-ledger.js'

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
  /** Resume on first use, and count `totalMs` from then rather than from beginTurn. */
  readonly lazy: boolean
}

/**
 * One turn, built complete from its {@link TurnStart}. It holds the lease keeper (renewal, loss, abort), the
 * handle the user gets and the journal, and runs its phases in order, each given the turn's narrow
 * {@link TurnScope} and the values the phase before it returned: the ladder (resume-ladder.ts) returns the
 * sandbox, the assessment (assess.ts) what the turn end needs, the turn end (turn-end.ts) the end report.
 * What the phases and the user's calls did goes on the turn's {@link TurnLedger}, which the turn end reads
 * once; what is left here is the turn's own lifecycle (the resume and end in flight, the first-cell offer).
 */
export class TurnImpl implements Turn {
  readonly conversationId: string
  readonly tenant: string
  readonly journal: TurnJournal
  readonly sandbox: SandboxHandle
  readonly #start: TurnStart
  readonly #keeper: LeaseKeeper
  readonly #scope: TurnScope
  readonly #ledger = new TurnLedger()
  #readyPromise: Promise<SandboxHandle> | undefined
  #endPromise: Promise<TurnEndReport> | undefined
  readonly #released = Promise.withResolvers<Checkpoint | undefined>()
  #endReport: TurnEndReport | undefined
  #ended = false
  /** A lazy turn's first code cell or command, offered to carry the resume's probes; the resume takes it or not. */
  #firstCall: FirstCall | undefined
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
        if (checked.kind === 'file') this.#ledger.noteWrite(checked.path, checked.content)
      },
      list: async () => (await ctx.store.readJournal(key)).map((entry) => entry.step),
    }
    this.sandbox = createTurnHandle({
      key,
      provider: ctx.provider,
      signal: this.#keeper.signal,
      assertLive: () => this.#assertLive(),
      ready: () => this.ready(),
      lease: this.#keeper,
      ledger: this.#ledger,
      carryFirstCode: (code, options) => this.#carryFirstCode(code, options),
      carryFirstCommand: (command, options) => this.#carryFirstCommand(command, options),
      carryFirstRead: (read) => this.#carryFirstRead(read),
    })
  }

  /**
   * The first code cell of a lazy turn whose resume has not assessed the sandbox yet, in the default Python
   * context: offered to the resume (which starts now if it has not), so that it carries the probes.
   */
  #carryFirstCode(code: string, options: RunCodeOptions): Promise<CodeResult | undefined> | undefined {
    if ((options.language ?? 'python') !== 'python' || options.contextId !== undefined) return undefined
    if (!this.#carriable()) return undefined
    const outcome = Promise.withResolvers<CodeResult | undefined>()
    this.#offer({ kind: 'code', code, options, settle: outcome.resolve })
    return outcome.promise
  }

  /**
   * The first command of such a turn, when the last manifest has a marker for its first line to test (the
   * memory sentinel, if any, is probed once the command has begun: fidelity-carried-command.ts).
   */
  #carryFirstCommand(
    command: string,
    options: RunCommandOptions,
  ): Promise<CommandResult | undefined> | undefined {
    if (!this.#carriable() || !this.#start.acquired.record?.manifest?.filesystem) return undefined
    const outcome = Promise.withResolvers<CommandResult | undefined>()
    this.#offer({ kind: 'command', command, options, settle: outcome.resolve })
    return outcome.promise
  }

  /**
   * The first file read of such a turn (readFile, listDir, exists): sent beside the probes, whatever they
   * compare, its answer kept when they find the files kept (assess.ts). Writes and removes are not offered:
   * sent before the verdict, a write could be undone by the repair, or change what the journal replay finds
   * and rebuilds, so they wait for the resume.
   */
  #carryFirstRead<R>(read: (handle: SandboxHandle) => Promise<R>): Promise<R | undefined> | undefined {
    if (!this.#takesOffers()) return undefined
    const outcome = Promise.withResolvers<R | undefined>()
    this.#offer({
      kind: 'read',
      read,
      settle: (answer, after) => {
        // With no replay to come the report is made at once: the caller has it with the answer.
        const reported = async () => {
          const value = (await answer) as R
          await this.ready().catch(() => undefined)
          return value
        }
        outcome.resolve(answer && !after?.replayFollows ? reported() : (answer as Promise<R> | undefined))
      },
    })
    return outcome.promise
  }

  /** Whether the turn's next call may carry the probes (a code cell or a command). */
  #carriable(): boolean {
    const record = this.#start.acquired.record
    return this.#takesOffers() && carryPlan(record!.manifest!) !== undefined
  }

  /** Whether the turn's resume may take its next call as the first one (see assess.ts). */
  #takesOffers(): boolean {
    const { ctx } = this.#start
    if (this.#offered || this.#ledger.assessed || this.#ended || !ctx.config.fidelityProbes) return false
    // Only a turn whose resume waits for its first use, or is still under way.
    if (!this.#start.lazy && !this.#readyPromise) return false
    // Only where the resume will probe a mapped sandbox with nothing but the built-in probes (a pending
    // restore starts a new sandbox): a call the resume cannot take would only wait for it.
    const record = this.#start.acquired.record
    return !(!record?.sandboxId || !record.manifest || record.restore || ctx.config.healthChecks.length > 0)
  }

  /** Offers the call to the resume, which starts now if it has not. */
  #offer(call: FirstCall): void {
    this.#offered = true
    this.#firstCall = call
    this.ready().catch(() => undefined)
  }

  /** Takes the offered first cell (once). */
  #takeFirstCall(): FirstCall | undefined {
    const call = this.#firstCall
    this.#firstCall = undefined
    return call
  }

  get report(): ResumeReport | undefined {
    return this.#ledger.assessed?.report
  }

  get checkpointed(): Promise<Checkpoint | undefined> {
    return this.#released.promise
  }

  async checkpoint(): Promise<MidTurnCheckpoint> {
    this.#assertLive()
    const handle = await this.ready()
    this.#assertLive()
    const current = this.#ledger.handle ?? handle
    return midTurnCheckpoint(this.#scope, current, { manifest: () => this.#manifestNow(current) })
  }

  /**
   * The manifest of the sandbox as it is now (with fidelity probes on), for a mid-turn checkpoint; null when
   * the probes are off or the manifest could not be written (reported as phase `manifest`): a restore to it
   * then rebuilds memory from the journal.
   */
  async #manifestNow(handle: SandboxHandle): Promise<TurnManifest | null> {
    const { ctx, key } = this.#start
    const manifest = await writeTurnManifest(
      this.#scope,
      this.#ledger.read(),
      { handle, signal: this.#keeper.signal },
      (phase, cause) => ctx.emitError(phase, cause, key),
    )
    return manifest ?? null
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
      throw turnEndedError({ tenant: this.tenant, conversationId: this.conversationId })
    }
  }

  ready(): Promise<SandboxHandle> {
    if (this.#ended) {
      return Promise.reject(turnEndedError({ tenant: this.tenant, conversationId: this.conversationId }))
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
          if (failure.code === 'TENANT_MISMATCH') this.#ledger.metForeignSandbox()
          ctx.emitError('resume', failure, key)
          throw failure
        },
      )
    return this.#readyPromise
  }

  /** The resume: climb the ladder to a sandbox, then assess it and make the report. */
  async #resume(): Promise<void> {
    const scope = this.#scope
    const { ctx, key, acquired, known } = this.#start
    if (scope.signal.aborted) throw abortedError(key, scope.signal.reason)
    const resumeStarted = performance.now()
    const attempt = createResumeAttempt(ctx, scope.signal)
    const ledger = this.#ledger
    ledger.resumeBegan(attempt)
    const start = await startingPoint(scope, acquired)
    const connectStarted = performance.now()
    // The sandbox runs (and costs) from the resume call on, not only once it is ready.
    ledger.sandboxRunning(scope.storeNow())
    const climbed = await climbLadder(scope, { ...start, holders: acquired.holders, known }, attempt)
    const connectMs = performance.now() - connectStarted
    const handle = watchProcessCalls(climbed.handle, ledger)
    ledger.climbed(handle)
    const assessed = await assess(scope, climbed, attempt, {
      handle,
      acquiredManifest: acquired.record?.manifest ?? null,
      storeMs: this.#start.storeMs,
      connectMs,
      // A lazy turn counts from its first use; an eager one from beginTurn.
      since: this.#start.lazy ? resumeStarted : this.#start.beganAt,
      takeFirstCall: () => this.#takeFirstCall(),
      notes: ledger,
    })
    ledger.assessedAs(assessed)
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
    const { ctx, key, acquired } = this.#start
    this.#keeper.detach()
    // Wait for a resume in flight so its sandbox is paused too; its failure was already reported.
    if (this.#readyPromise) await this.#readyPromise.catch(() => undefined)
    this.#ended = true
    this.#keeper.releasing()
    const endReport = await finishTurn(this.#scope, {
      ...this.#ledger.read(),
      acquiredTurnCount: acquired.record?.turnCount,
      onReleased: this.#released.resolve,
    })
    this.#keeper.stop()
    this.#endReport = endReport
    this.#keeper.abort(turnEndedError({ tenant: key.tenant, conversationId: key.conversationId }))
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
