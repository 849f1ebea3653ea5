// The Agents SDK's SandboxClient over a sandkeep session manager. A run's `create` begins a turn of the
// conversation its options name (the manager's ladder finds, resumes, or recreates and rehydrates the sandbox);
// the RunState keeps only the conversation's key, and `resume` begins the next turn of that conversation.
import {
  isNoopSnapshotSpec,
  type Manifest,
  normalizeSandboxClientCreateArgs,
  type SandboxClient,
  type SandboxClientCreateArgs,
  type SandboxClientOptions,
  type SandboxSessionResumeValidationInput,
} from '@openai/agents-core/sandbox'
import { deserializeManifest } from '@openai/agents-core/sandbox/internal'
import { type JournalStep, type SandboxHandle, SandkeepError, type Turn } from '@sandkeep/core'
import { unsupported } from './errors.js'
import { manifestSteps, unrecordedSteps, withClientRoot } from './manifest.js'
import {
  type RunKey,
  readRunKey,
  type SandkeepRunOptions,
  type SandkeepSandboxClientOptions,
  validateClientOptions,
} from './options.js'
import { SandkeepSandboxSession, type SandkeepSessionState } from './session.js'
import { readSessionKey, serializeSessionKey } from './state.js'

/** The `backendId` RunState records for sandkeep sessions. */
export const SANDKEEP_BACKEND_ID = 'sandkeep'

/**
 * A `SandboxClient` whose sessions are sandkeep turns. Made by {@link createSandkeepSandboxClient}. Its run
 * options are {@link SandkeepRunOptions}; they are typed as the SDK's open options record so the client fits
 * `RunConfig.sandbox` as is, and checked at run time (INVALID_ARGUMENT before any I/O).
 */
export interface SandkeepSandboxClient extends SandboxClient<SandboxClientOptions, SandkeepSessionState> {
  readonly backendId: typeof SANDKEEP_BACKEND_ID
  create(
    args?: SandboxClientCreateArgs<SandboxClientOptions> | Manifest,
    manifestOptions?: SandboxClientOptions,
  ): Promise<SandkeepSandboxSession>
  resume(state: SandkeepSessionState): Promise<SandkeepSandboxSession>
  delete(state: SandkeepSessionState): Promise<void>
  serializeSessionState(state: SandkeepSessionState): Promise<Record<string, unknown>>
  deserializeSessionState(state: Record<string, unknown>): Promise<SandkeepSessionState>
}

/**
 * Makes the client. No I/O: the first run's `create` begins the first turn.
 * @throws SandkeepError INVALID_ARGUMENT for bad options
 */
export function createSandkeepSandboxClient(options: SandkeepSandboxClientOptions): SandkeepSandboxClient {
  const { sessions, deleteEndsSession, defaultRoot, tenant } = validateClientOptions(options)
  const live = new WeakMap<SandkeepSessionState, SandkeepSandboxSession>()

  async function open(key: RunKey, manifest: Manifest): Promise<SandkeepSandboxSession> {
    const steps = manifestSteps(manifest)
    const turn = await sessions.beginTurn(key.conversationId, { tenant: key.tenant, lazy: key.lazy })
    try {
      await materialize(turn, steps)
      const environment = await manifest.resolveEnvironment()
      const state: SandkeepSessionState = {
        manifest,
        conversationId: key.conversationId,
        tenant: key.tenant,
        environment,
      }
      const session = new SandkeepSandboxSession({ state, turn, sessions })
      live.set(state, session)
      return session
    } catch (error) {
      await turn.end().catch(() => {})
      throw error
    }
  }

  return {
    backendId: SANDKEEP_BACKEND_ID,
    async create(args, manifestOptions) {
      const normalized = normalizeSandboxClientCreateArgs(args, manifestOptions)
      if (normalized.snapshot && !isNoopSnapshotSpec(normalized.snapshot)) {
        throw unsupported(
          'The sandkeep sandbox client keeps the sandbox itself across runs and takes no snapshot spec: leave out `sandbox.snapshot` (use the session manager’s checkpoints to go back to an earlier turn).',
        )
      }
      const key = readRunKey(normalized.options, tenant)
      return await open(key, withClientRoot(normalized.manifest, defaultRoot))
    },
    async resume(state) {
      const key = readSessionKey(state)
      return await open({ ...key, lazy: false }, withClientRoot(state.manifest, defaultRoot))
    },
    async delete(state) {
      const key = readSessionKey(state)
      await live.get(state)?.stop()
      if (deleteEndsSession) await sessions.endSession(key.conversationId, { tenant: key.tenant })
    },
    async serializeSessionState(state) {
      return serializeSessionKey(state)
    },
    async deserializeSessionState(record) {
      const key = readSessionKey(record)
      if (record.manifest === null || typeof record.manifest !== 'object') {
        throw new SandkeepError({
          code: 'INVALID_ARGUMENT',
          message:
            'The sandbox session state has no manifest: pass the state RunState.toString() wrote, unchanged.',
          conversationId: key.conversationId,
          tenant: key.tenant,
        })
      }
      return {
        ...key,
        manifest: withClientRoot(
          deserializeManifest(record.manifest as Record<string, unknown>),
          defaultRoot,
        ),
      }
    },
    validateSessionStateForResume(input: SandboxSessionResumeValidationInput<SandkeepSessionState>) {
      readSessionKey(input.state)
    },
    resolveTrustedManifestForResume(manifest) {
      return withClientRoot(manifest, defaultRoot)
    },
    canPersistOwnedSessionState() {
      return true
    },
    // A run that stops for an approval serializes its session and closes it: the turn ends and the sandbox is
    // paused while the user decides; the resumed run begins the next turn, in this process or another.
    canReusePreservedOwnedSession() {
      return false
    },
  }
}

/** Runs the manifest's steps the journal does not hold yet, recording each once it succeeded. */
async function materialize(turn: Turn, steps: JournalStep[]): Promise<void> {
  const todo = unrecordedSteps(steps, await turn.journal.list())
  for (const step of todo) {
    await runStep(turn.sandbox, step)
    await turn.journal.record(step)
  }
}

async function runStep(sandbox: SandboxHandle, step: JournalStep): Promise<void> {
  if (step.kind === 'file') {
    await sandbox.writeFile(step.path, step.content)
    return
  }
  if (step.kind !== 'command') throw unsupported('Manifest steps are files and commands only.')
  const result = await sandbox.runCommand(step.command)
  if (result.exitCode !== 0) {
    throw new SandkeepError({
      code: 'PROVIDER_ERROR',
      message: `Materializing the manifest failed (exit ${result.exitCode}: ${result.stderr.slice(0, 300)}); check the manifest's root and paths.`,
      sandboxId: sandbox.id,
    })
  }
}
