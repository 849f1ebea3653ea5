// The sandbox session as the AI SDK types it: @sandkeep/agent's session is an `Experimental_SandboxSession` in
// shape (checked below), so this module only names it with the AI SDK's types.
import {
  type SandboxSessionOptions as AgentSessionOptions,
  createSandboxSession as createAgentSession,
  restrictedSandboxSession as restrictedAgentSession,
  type SandboxSession,
} from '@sandkeep/agent'
import type { Experimental_SandboxSession } from 'ai'

export {
  DEFAULT_WORKING_DIRECTORY,
  isSandkeepSandboxSession,
  type SessionRunCodeOptions,
  type SessionRunCommandOptions,
} from '@sandkeep/agent'

/** Options of {@link createSandboxSession} (@sandkeep/agent's; sandkeepTurn sets the turn's `beforeBegin`). */
export type SandboxSessionOptions = Omit<AgentSessionOptions, 'beforeBegin'>

/**
 * AI SDK 7's `Experimental_SandboxSession` backed by one lazy sandkeep turn, plus what sandkeep adds
 * (persistent code interpreter, the resume report, the journal). Pass it as `experimental_sandbox`.
 */
export interface SandkeepSandboxSession extends Omit<SandboxSession, 'spawn'> {
  /** The AI SDK's `spawn`; `stdin: true` is refused (CAPABILITY_UNSUPPORTED) before anything starts. */
  readonly spawn: Experimental_SandboxSession['spawn'] & SandboxSession['spawn']
}

/**
 * Makes an `Experimental_SandboxSession` for one turn of a conversation. Synchronous and free: the turn
 * begins, and the sandbox resumes, on the first call that needs it; `end()` (or `await using`) ends it.
 * @throws SandkeepError INVALID_ARGUMENT for a bad conversation id, tenant or option, before any I/O.
 */
export function createSandboxSession(options: SandboxSessionOptions): SandkeepSandboxSession {
  // `satisfies` fails to compile when the session stops being an AI SDK sandbox.
  return aiSession(createAgentSession(options)) satisfies Experimental_SandboxSession
}

/** The session of @sandkeep/agent under the AI SDK's name; `spawn` refuses the one overload it lacks (stdin). */
export function aiSession(session: SandboxSession): SandkeepSandboxSession {
  return session as unknown as SandkeepSandboxSession
}

/**
 * The session without `end()` and without the native SDK object (see @sandkeep/agent's
 * `restrictedSandboxSession`), for a harness's tools.
 */
export function restrictedSandboxSession(
  session: SandkeepSandboxSession,
  owner: string,
): SandkeepSandboxSession {
  return aiSession(restrictedAgentSession(session, owner))
}
