// createSandboxSession wires the session's modules together; each concern has its own file beside this
// one: options (checks, defaults), lifecycle (the lazy turn, operations, end), paths (paths,
// encodings, bytes), files, commands (run, runCommand, runCode, startProcess), spawn, ports, and the
// restricted view (restricted).
import { commandOperations } from './commands.js'
import { fileOperations } from './files.js'
import { createSessionLifecycle } from './lifecycle.js'
import { sessionMarker } from './marker.js'
import { checkPrewarm, resolveSessionOptions, type SessionSettings } from './options.js'
import { resolveSandboxPath } from './paths.js'
import { portOperations } from './ports.js'
import { spawnProcess } from './spawn.js'
import type { SandboxSession, SandboxSessionOptions, SessionContext, SpawnOptions } from './types.js'

export { DEFAULT_WORKING_DIRECTORY } from './options.js'
export { restrictedSandboxSession } from './restricted.js'
export type {
  SandboxSession,
  SandboxSessionOptions,
  SessionRunCodeOptions,
  SessionRunCommandOptions,
} from './types.js'

/** True when `value` is a session made by {@link createSandboxSession} (works across package copies). */
export function isSandkeepSandboxSession(value: unknown): value is SandboxSession {
  return (
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[sessionMarker] === true
  )
}

/**
 * Makes the sandbox session of one turn of a conversation. Synchronous and free: the turn
 * begins, and the sandbox resumes, on the first call that needs it; `end()` (or `await using`) ends it.
 * @throws SandkeepError INVALID_ARGUMENT for a bad conversation id, tenant or option, before any I/O.
 */
export function createSandboxSession(options: SandboxSessionOptions): SandboxSession {
  return sandboxSessionOf(resolveSessionOptions(options))
}

/** The session of checked settings. */
function sandboxSessionOf(settings: SessionSettings): SandboxSession {
  const { conversationId, tenant, workingDirectory, commandTimeoutMs } = settings
  const lifecycle = createSessionLifecycle(settings)
  const context: SessionContext = {
    conversationId,
    tenant,
    workingDirectory,
    commandTimeoutMs,
    operation: lifecycle.operation,
    resolvePath: (path) => resolveSandboxPath(workingDirectory, path),
  }
  const session: SandboxSession & { readonly [sessionMarker]: true } = {
    [sessionMarker]: true,
    conversationId,
    tenant,
    workingDirectory,
    description: settings.description,
    get started() {
      return lifecycle.turn?.started ?? false
    },
    get ended() {
      return lifecycle.ended
    },
    whenEnded: lifecycle.whenEnded,
    get endReport() {
      return lifecycle.endReport
    },
    get report() {
      return lifecycle.turn?.report
    },
    get turn() {
      return lifecycle.turn
    },
    signal: lifecycle.signal,
    ready: (readyOptions) => lifecycle.operation(readyOptions?.abortSignal, async (handle) => handle),
    prewarm: (mode = true) => lifecycle.prewarm(checkPrewarm(mode)),
    ...fileOperations(context),
    ...commandOperations(context),
    ...portOperations(context),
    spawn: (spawnOptions: SpawnOptions) => spawnProcess(context, spawnOptions),
    recordSetupStep: (step) => lifecycle.recordSetupStep(step),
    takeStateNotice: () => lifecycle.takeStateNotice(),
    resolvePath: context.resolvePath,
    end: () => lifecycle.end(),
    [Symbol.asyncDispose]: async () => {
      await lifecycle.end()
    },
  }
  return session
}
