// What the assessment engine is given to work with: one sandbox and the turn's signal and retry policy, plus
// the manifest the last turn left for the probes. The manager builds it (manager/assess.ts) from its own turn
// scope; nothing in this folder knows the manager's types. The engine emits no events: it returns outcomes,
// and the manager turns them into its events and report.
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../contract/retry.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import type { TurnManifest } from '../contract/session-store.js'

/** One sandbox under assessment, with the turn's signal and the policy its provider calls retry by. */
export interface AssessmentScope {
  readonly sandbox: SandboxHandle
  readonly signal: AbortSignal
  /** How a probe's provider call is retried (connect's policy); default {@link DEFAULT_RETRY_POLICY}. */
  readonly retry?: RetryPolicy
}

/** An assessment of a sandbox against what the previous turn left on it. */
export interface ProbeScope extends AssessmentScope {
  readonly manifest: TurnManifest
}

/** The scope's retry policy, or the default one. */
export function retryOf(scope: AssessmentScope): RetryPolicy {
  return scope.retry ?? DEFAULT_RETRY_POLICY
}
