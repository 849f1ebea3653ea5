import type { ManagerContext } from './context.js'

/**
 * One resume's dealings with the platform: its provider calls, retried by the configured policy and each retry
 * counted for `report.retries`, and what it did that the turn end must know even when the resume fails: the
 * sandbox it asked the provider for (it may be running now), the pause it ended, and the work it left
 * running when it stopped waiting (the kill of a sandbox whose creation outlived an abort).
 */
export interface ResumeAttempt {
  readonly signal: AbortSignal
  /** Retries so far of every provider call this resume made. */
  readonly retries: number
  /** Counts one retry: the `onRetry` of every provider call of the resume. */
  onRetry(): void
  /** A provider call of the resume, retried and counted. */
  call<T>(operation: () => Promise<T>): Promise<T>
  /** Notes that the resume asked the provider for `sandboxId` (connect or create). */
  touch(sandboxId: string): void
  /** The sandbox the resume last asked the provider for; null before. */
  readonly touched: string | null
  /** Notes that the resume ended the session's pause that began at `pausedAt` (epoch ms). */
  endPause(pausedAt: number): void
  /** When the pause this resume ended began, epoch ms; null when it ended none (or joined another turn). */
  readonly resumedFromPausedAt: number | null
  /** Hands over work the resume no longer waits for (it must not reject): the turn end waits for it. */
  abandon(work: Promise<void>): void
  /** Settles once all the work handed to `abandon` so far has. */
  abandoned(): Promise<void>
}

export function createResumeAttempt(ctx: ManagerContext, signal: AbortSignal): ResumeAttempt {
  let retries = 0
  let touched: string | null = null
  let resumedFromPausedAt: number | null = null
  const left: Promise<void>[] = []
  const onRetry = () => {
    retries++
  }
  return {
    signal,
    get retries() {
      return retries
    },
    onRetry,
    call: (operation) => ctx.call(operation, { signal, onRetry }),
    touch(sandboxId) {
      touched = sandboxId
    },
    get touched() {
      return touched
    },
    endPause(pausedAt) {
      resumedFromPausedAt = pausedAt
    },
    get resumedFromPausedAt() {
      return resumedFromPausedAt
    },
    abandon(work) {
      left.push(work)
    },
    abandoned: () => Promise.all(left).then(() => undefined),
  }
}
