import type { UsedContext } from '../assessment/fidelity.js'
import type { VerifiedState } from '../assessment/fidelity-manifest.js'
import { contentDigest } from '../assessment/file-digests.js'
import type { ProcessInfo, SandboxHandle } from '../contract/sandbox-provider.js'
import type { FileWitness } from '../contract/session-store.js'
import type { Assessed, AssessmentNotes } from './assess.js'
import type { ResumeAttempt } from './resume-attempt.js'

/** What the turn end reads of a turn: everything its resume, its assessment and its handle noted. */
export interface TurnEntries {
  /** What the assessment left; undefined when no resume got a sandbox (a lazy turn unused, a failed ladder). */
  readonly assessed: Assessed | undefined
  /** The sandbox the resume asked the provider for, even if it failed (it may be running); null for none. */
  readonly touched: string | null
  /**
   * When the resume started the sandbox running (its create or connect call), epoch ms on the store's clock;
   * 0 without a resume.
   */
  readonly runningSince: number
  /** When the pause the resume ended began, epoch ms (the record's `pausedAt`); null when it ended none. */
  readonly resumedFromPausedAt: number | null
  /** The resume met another tenant's sandbox: the end never touches it. */
  readonly foreign: boolean
  /** Interpreter contexts the turn ran code in (the bootstrap's and replay's first), for the manifest's sentinels. */
  readonly contexts: readonly UsedContext[]
  /** Files the turn wrote (its handle's writeFile, journal file steps), oldest first, for the file witnesses. */
  readonly written: readonly FileWitness[]
  /** The sentinels and the marker the resume found intact: the turn end need not write them again. */
  readonly verified: VerifiedState
  /** The process list the resume read from this sandbox (or knew to be empty), for the turn end to reuse. */
  readonly processesAtResume: readonly ProcessInfo[] | undefined
  /**
   * Settles once every sandbox the resume stopped waiting for (an abort during its creation) is killed; the
   * end waits for it, so that an ended turn leaves no sandbox it asked for running unmapped.
   */
  readonly abandoned: Promise<void> | undefined
  /** A call since the resume may have changed the process list (a start, kill, command or the SDK object). */
  readonly processesMayHaveChanged: boolean
  /** The caller ran something in the sandbox (a resume alone, even a prewarm, does not count). */
  readonly used: boolean
}

/**
 * The record of one turn as it happens: the resume, the assessment and the user's handle note on it what
 * they did, and the turn end reads it once ({@link TurnLedger.read}). Nothing calls back into the turn for
 * this, and no phase result is changed after it was noted.
 */
export class TurnLedger implements AssessmentNotes {
  readonly #contexts: UsedContext[] = []
  readonly #written: FileWitness[] = []
  #attempt: ResumeAttempt | undefined
  #runningSince = 0
  #handle: SandboxHandle | undefined
  #assessed: Assessed | undefined
  #verified: VerifiedState = { contexts: [], marker: false }
  #processesAtResume: readonly ProcessInfo[] | undefined
  #foreign = false
  #processesMayHaveChanged = false
  #used = false

  /** The resume began dealing with the platform. */
  resumeBegan(attempt: ResumeAttempt): void {
    this.#attempt = attempt
  }

  /** The resume's create or connect call started the sandbox running (epoch ms, store clock). */
  sandboxRunning(since: number): void {
    this.#runningSince = since
  }

  /** The ladder got the sandbox, as the turn uses it. */
  climbed(handle: SandboxHandle): void {
    this.#handle = handle
  }

  /** The assessment is over (passed or not). */
  assessedAs(assessed: Assessed): void {
    this.#assessed = assessed
  }

  /** The resume met another tenant's sandbox. */
  metForeignSandbox(): void {
    this.#foreign = true
  }

  /** The sandbox as the turn uses it, once the ladder got one. */
  get handle(): SandboxHandle | undefined {
    return this.#handle
  }

  /** What the assessment left, once it is over. */
  get assessed(): Assessed | undefined {
    return this.#assessed
  }

  noteContexts(contexts: readonly UsedContext[]): void {
    for (const context of contexts) this.noteContext(context)
  }

  noteProbed(verified: VerifiedState, processesAtResume: readonly ProcessInfo[] | undefined): void {
    this.#verified = verified
    this.#processesAtResume = processesAtResume
  }

  /** The caller ran something in the sandbox. */
  noteUse(): void {
    this.#used = true
  }

  /** Code ran in an interpreter context (noted once per language and context). */
  noteContext(entry: UsedContext): void {
    if (!this.#contexts.some((c) => c.language === entry.language && c.contextId === entry.contextId)) {
      this.#contexts.push(entry)
    }
  }

  /** The turn wrote a file: the latest content written is its witness. */
  noteWrite(path: string, data: string | Uint8Array): void {
    // An empty file proves little (any template may hold one); one too large to digest cheaply is left out.
    const sha256 = data.length === 0 ? undefined : contentDigest(data)
    const at = this.#written.findIndex((w) => w.path === path)
    if (at >= 0) this.#written.splice(at, 1)
    if (sha256) this.#written.push({ path, sha256 })
  }

  /** A call that can change the process list ran (start, kill, a command, or the SDK object handed out). */
  noteProcessChange(): void {
    this.#processesMayHaveChanged = true
  }

  /** What the turn end reads: a copy, so that nothing noted later changes what the end decided on. */
  read(): TurnEntries {
    const attempt = this.#attempt
    return {
      assessed: this.#assessed,
      touched: attempt?.touched ?? null,
      runningSince: this.#runningSince,
      resumedFromPausedAt: attempt?.resumedFromPausedAt ?? null,
      foreign: this.#foreign,
      contexts: [...this.#contexts],
      written: [...this.#written],
      verified: this.#verified,
      processesAtResume: this.#processesAtResume,
      abandoned: attempt?.abandoned(),
      processesMayHaveChanged: this.#processesMayHaveChanged,
      used: this.#used,
    }
  }
}
