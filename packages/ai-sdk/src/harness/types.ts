// The harness provider's public types: its options, and the network sandbox session it returns, which is
// the AI SDK harness's own type plus what sandkeep knows of the turn.
import type { HarnessV1NetworkSandboxSession, HarnessV1SandboxProvider } from '@ai-sdk/harness'
import type { ResumeReport, SessionManager, TurnEndReport } from '@sandkeep/core'
import type { Experimental_SandboxSession } from 'ai'
import type { SandkeepSandboxSession } from '../sandbox-session/index.js'

/** Options of {@link createSandkeepHarnessProvider}. */
export interface SandkeepHarnessProviderOptions {
  /** The session manager that keeps each harness session's sandbox (its store, provider, checks, policy). */
  sessions: SessionManager
  /**
   * The tenant of every session: a string, for a provider made per authenticated tenant; or a resolver
   * called at each `createSession`/`resumeSession` that returns the tenant of the caller this process
   * authenticated (a closure over the request, an AsyncLocalStorage). Never derive it from the session id:
   * the harness's caller names the id, so anyone who can name `acme:chat-1` would get acme's sandbox. The
   * resolver is not given the id for that reason (reading `sessionId` from its argument throws). Default
   * `'default'`. A bad tenant is INVALID_ARGUMENT before any I/O.
   */
  tenant?: string | ((context: HarnessTenantContext) => string | PromiseLike<string>)
  /**
   * The ports sessions list in `ports` (bridge-backed harness adapters bind the first one). Every port is
   * reachable whether listed or not, as on E2B. Default none.
   */
  ports?: number[]
  /** Absolute directory commands start in and relative paths resolve against. Default `/home/user`. */
  workingDirectory?: string
  /** Limit of one `run`/`spawn` command, ms; `0` for none. Default 300 000. */
  commandTimeoutMs?: number
  /** How long `stop()` waits for aborted calls to settle before ending the turn, ms. Default 10 000. */
  endGraceMs?: number
  /** The sandbox's `description` for the model. */
  description?: string
  /**
   * A session neither stopped nor destroyed (detached, or its owner crashed) ends its turn after this long,
   * ms, so the sandbox is paused rather than left running; `0` for never. Default 900 000 (15 min).
   */
  maxDurationMs?: number
  /**
   * How long `createSession` waits for another process's `onFirstCreate` on the same sandbox, and after
   * how long such a run counts as abandoned, ms. Default 600 000 (10 min).
   */
  firstCreateTimeoutMs?: number
  /** `providerId`; default `'sandkeep'`. */
  providerId?: string
}

/** What the `tenant` resolver is told: which call asks (never the session id: see the option). */
export interface HarnessTenantContext {
  /** The provider call that needs the tenant. */
  readonly operation: 'createSession' | 'resumeSession'
}

/** What `createSession` takes (the harness spec's options). */
export type HarnessCreateSessionOptions = NonNullable<
  Parameters<HarnessV1SandboxProvider['createSession']>[0]
>
/** What `resumeSession` takes (the harness spec's options). */
export type HarnessResumeSessionOptions = Parameters<
  NonNullable<HarnessV1SandboxProvider['resumeSession']>
>[0]

/** The harness's network sandbox session on a sandkeep turn, with what the turn found and left. */
export interface SandkeepNetworkSandboxSession
  extends HarnessV1NetworkSandboxSession,
    Pick<Experimental_SandboxSession, 'stat' | 'listDirectory' | 'deleteFile'> {
  /** The harness session id, which is the sandkeep conversation id. */
  readonly conversationId: string
  /** The sandkeep tenant. */
  readonly tenant: string
  /** What the resume found: created, resumed, recreated; what survived; the health checks and repairs. */
  readonly report: ResumeReport
  /** What `stop()` did (paused, auto-pause, kept...), once stopped. */
  readonly endReport: TurnEndReport | undefined
  /** Whether this session ran `onFirstCreate` (a fresh sandbox, or one whose first-create state was lost). */
  readonly firstCreateRan: boolean
  /** Files, commands, code and port addresses, without `stop`, `destroy`, the network setters or `end()`. */
  readonly restricted: () => SandkeepSandboxSession
}

/** A `HarnessV1SandboxProvider` whose sessions are sandkeep turns. */
export interface SandkeepHarnessProvider extends HarnessV1SandboxProvider {
  readonly createSession: (options?: HarnessCreateSessionOptions) => Promise<SandkeepNetworkSandboxSession>
  readonly resumeSession: (options: HarnessResumeSessionOptions) => Promise<SandkeepNetworkSandboxSession>
}
