// A narrower view of a sandbox session, for code that may use the sandbox but neither end its turn nor reach
// the platform (a harness's tools): files, commands, code, port addresses and the journal, as the session
// has them. `end()` (which pauses the sandbox) belongs to whoever owns the turn, and the handle `ready()`
// gives carries no native SDK object, which could pause or kill the sandbox or change its network.
import { type SandboxHandle, SandkeepError } from '@sandkeep/core'
import { sessionMarker } from './marker.js'
import type { SandboxSession } from './types.js'

/** The session's facts the view passes through. */
const FACTS = [
  'conversationId',
  'tenant',
  'workingDirectory',
  'description',
  'started',
  'ended',
  'whenEnded',
  'endReport',
  'report',
  'signal',
] as const satisfies ReadonlyArray<keyof SandboxSession>

/**
 * The session without `end()` and without the native SDK object. It is the same sandbox and the same turn:
 * a narrower API for code the caller trusts less, not a security boundary (it runs in the same process).
 * @param owner who ends the turn, named in the error `end()` throws
 */
export function restrictedSandboxSession(session: SandboxSession, owner: string): SandboxSession {
  const refuseEnd = (): Promise<never> =>
    Promise.reject(
      new SandkeepError({
        code: 'CAPABILITY_UNSUPPORTED',
        message: `This restricted view of the sandbox cannot end its turn; ${owner} does.`,
        conversationId: session.conversationId,
        tenant: session.tenant,
      }),
    )
  // Typed so that a member the session gains and the view leaves out fails to compile.
  const view: Omit<SandboxSession, (typeof FACTS)[number]> & { readonly [sessionMarker]: true } = {
    [sessionMarker]: true,
    // The turn could end itself: left out.
    turn: undefined,
    ready: async (options?: { abortSignal?: AbortSignal }) => withoutNative(await session.ready(options)),
    // Only begins the resume sooner: nothing a tool could not cause by its first call.
    prewarm: session.prewarm,
    readFile: session.readFile,
    readBinaryFile: session.readBinaryFile,
    readTextFile: session.readTextFile,
    writeFile: session.writeFile,
    writeBinaryFile: session.writeBinaryFile,
    writeTextFile: session.writeTextFile,
    stat: session.stat,
    listDirectory: session.listDirectory,
    deleteFile: session.deleteFile,
    run: session.run,
    spawn: session.spawn,
    runCode: session.runCode,
    runCommand: session.runCommand,
    startProcess: session.startProcess,
    listDir: session.listDir,
    portEndpoint: session.portEndpoint,
    recordSetupStep: session.recordSetupStep,
    takeStateNotice: session.takeStateNotice,
    resolvePath: session.resolvePath,
    end: refuseEnd,
    [Symbol.asyncDispose]: refuseEnd,
  }
  // Read live: a turn begins and ends under the view.
  for (const name of FACTS) {
    Object.defineProperty(view, name, { get: () => session[name], enumerable: true })
  }
  return view as unknown as SandboxSession
}

/** The handle's calls without its `native` SDK object. */
function withoutNative(handle: SandboxHandle): SandboxHandle {
  return {
    get id() {
      return handle.id
    },
    get providerId() {
      return handle.providerId
    },
    native: undefined,
    runCommand: (command, options) => handle.runCommand(command, options),
    startProcess: (command, options) => handle.startProcess(command, options),
    listProcesses: () => handle.listProcesses(),
    killProcess: (pid) => handle.killProcess(pid),
    runCode: (code, options) => handle.runCode(code, options),
    readFile: ((path: string, options?: { format?: 'text' | 'bytes'; signal?: AbortSignal }) =>
      handle.readFile(path, options as { format: 'bytes' })) as SandboxHandle['readFile'],
    writeFile: (path, data, options) => handle.writeFile(path, data, options),
    listDir: (path, options) => handle.listDir(path, options),
    exists: (path) => handle.exists(path),
    remove: (path) => handle.remove(path),
    get portEndpoint() {
      return handle.portEndpoint
    },
  }
}
