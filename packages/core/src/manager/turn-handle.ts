import { mergeAbortSignals } from '../contract/abort-signals.js'
import { SandkeepError } from '../contract/errors.js'
import type {
  CodeResult,
  CommandResult,
  PortEndpoint,
  PortEndpointOptions,
  ReadFileOptions,
  RunCodeOptions,
  RunCommandOptions,
  SandboxHandle,
  SandboxProvider,
} from '../contract/sandbox-provider.js'
import type { SessionKey } from '../contract/validation.js'
import type { TurnLedger } from './turn-ledger.js'

/** What the user's handle needs of its turn, and nothing more. */
export interface HandleTurn {
  readonly key: SessionKey
  readonly provider: SandboxProvider
  /** The turn's abort signal, added to every call's own. */
  readonly signal: AbortSignal
  /** @throws SandkeepError LEASE_LOST after the lease was lost, TURN_ENDED after the end */
  assertLive(): void
  /** Resumes (once) and returns the ready sandbox. */
  ready(): Promise<SandboxHandle>
  /** The lease keeper's `lost`: LEASE_LOST once the lease was lost. */
  readonly lease: { readonly lost: SandkeepError | undefined }
  /**
   * The turn's ledger: the handle reads the resumed sandbox from it and notes there what the caller did
   * (used the sandbox, ran code in a context, wrote a file after the write succeeded).
   */
  readonly ledger: Pick<TurnLedger, 'handle' | 'noteUse' | 'noteContext' | 'noteWrite'>
  /**
   * Offers a code cell to carry the resume's built-in probes (see fidelity-carried.ts): undefined when the turn
   * does not take offers (the cell runs as usual); else the cell's result when the resume ran it, undefined
   * when the resume declined it (the cell then runs as usual, after the resume), or its error.
   */
  carryFirstCode(code: string, options: RunCodeOptions): Promise<CodeResult | undefined> | undefined
  /** The same offer for a command (its first line tests the marker: fidelity-carried-command.ts). */
  carryFirstCommand(
    command: string,
    options: RunCommandOptions,
  ): Promise<CommandResult | undefined> | undefined
  /**
   * The same offer for a file read, sent beside the probes: its answer, undefined when the probes found the
   * files lost (the read then runs again after the repair), or its error.
   */
  carryFirstRead<R>(read: (handle: SandboxHandle) => Promise<R>): Promise<R | undefined> | undefined
}

/** Adds the turn's abort signal to a call's own one. */
function withSignal<O extends { signal?: AbortSignal }>(turn: HandleTurn, options: O | undefined): O {
  const own = options?.signal
  const signal = mergeAbortSignals(turn.signal, own)
  return { ...(options ?? ({} as O)), signal }
}

/** Notes the interpreter context a code call runs in (the default one: Python's). */
function noteContext(turn: HandleTurn, options: RunCodeOptions | undefined): void {
  turn.ledger.noteContext({ language: options?.language ?? 'python', contextId: options?.contextId ?? null })
}

/** The handle the user gets: resumes a lazy turn on first use, refuses use after the end. */
export function createTurnHandle(turn: HandleTurn): SandboxHandle {
  const live = async () => {
    turn.assertLive()
    const handle = await turn.ready()
    turn.assertLive()
    return turn.ledger.handle ?? handle
  }
  const notReady = (what: string) =>
    new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message: `The sandbox's ${what} is not known until the lazy turn has resumed it: await turn.ready() first.`,
      tenant: turn.key.tenant,
      conversationId: turn.key.conversationId,
    })
  // Runs a call on the live handle; a failure is explained (lease lost, sandbox paused) before it is thrown.
  const use = async <T>(work: (handle: SandboxHandle) => Promise<T>): Promise<T> => {
    turn.ledger.noteUse()
    const handle = await live()
    try {
      return await work(handle)
    } catch (error) {
      throw await explainFailure(turn, error, handle.id)
    }
  }
  // A file read that is the turn's first call goes beside the resume's probes (see HandleTurn.carryFirstRead).
  const read = <T>(work: (handle: SandboxHandle) => Promise<T>): Promise<T> =>
    carriedOr(turn, turn.carryFirstRead(work), () => use(work), { waitReport: false })
  const readFile = async (path: string, options?: ReadFileOptions & { format?: 'text' | 'bytes' }) => {
    const merged = withSignal(turn, options)
    return read<string | Uint8Array>((handle) =>
      merged.format === 'bytes'
        ? handle.readFile(path, { ...merged, format: 'bytes' })
        : handle.readFile(path, { ...merged, format: 'text' }),
    )
  }
  return {
    get id() {
      turn.assertLive()
      const resumed = turn.ledger.handle
      if (!resumed) throw notReady('id')
      return resumed.id
    },
    get providerId() {
      return turn.provider.providerId
    },
    get native() {
      turn.assertLive()
      const resumed = turn.ledger.handle
      if (!resumed) throw notReady('native SDK object')
      turn.ledger.noteUse()
      return resumed.native
    },
    // Present exactly when the resumed sandbox's provider routes ports. An address is no use of the sandbox
    // (nothing is sent), so it stays available after the turn: a preview URL outlives the turn it was made in.
    get portEndpoint() {
      const resumed = turn.ledger.handle
      if (!resumed) {
        return () => {
          throw notReady('port endpoint')
        }
      }
      if (!resumed.portEndpoint) return undefined
      return (port: number, options?: PortEndpointOptions) =>
        resumed.portEndpoint?.(port, options) as PortEndpoint
    },
    runCommand: (command, options) => {
      const merged = withSignal(turn, options)
      const run = () => use((handle) => handle.runCommand(command, merged))
      // A command's result does not wait for the resume's report (its memory verdict may still be under
      // way): the agent's notice comes with the next result once the report is there.
      return carriedOr(turn, turn.carryFirstCommand(command, merged), run, { waitReport: false })
    },
    startProcess: (command, options) => use((handle) => handle.startProcess(command, options)),
    listProcesses: () => use((handle) => handle.listProcesses()),
    killProcess: (pid) => use((handle) => handle.killProcess(pid)),
    runCode: (code, options) => {
      const merged = withSignal(turn, options)
      const run = () =>
        use((handle) => {
          noteContext(turn, options)
          return handle.runCode(code, merged)
        })
      const carried = turn.carryFirstCode(code, merged)
      if (carried) noteContext(turn, options)
      return carriedOr(turn, carried, run, { waitReport: true })
    },
    readFile: readFile as SandboxHandle['readFile'],
    writeFile: (path, data, options) =>
      use(async (handle) => {
        await handle.writeFile(path, data, withSignal(turn, options))
        turn.ledger.noteWrite(path, data)
      }),
    listDir: (path, options) => {
      const merged = withSignal(turn, options)
      return read((handle) => handle.listDir(path, merged))
    },
    exists: (path) => read((handle) => handle.exists(path)),
    remove: (path) => use((handle) => handle.remove(path)),
  }
}

/**
 * The result of a call the resume took to carry its probes, or `run()` when there was no offer or the resume
 * declined it (then after the resume: the call runs on the repaired sandbox).
 */
function carriedOr<R>(
  turn: HandleTurn,
  carried: Promise<R | undefined> | undefined,
  run: () => Promise<R>,
  { waitReport }: { waitReport: boolean },
): Promise<R> {
  if (!carried) return run()
  return (async () => {
    turn.ledger.noteUse()
    let result: R | undefined
    try {
      result = await carried
    } catch (error) {
      await turn.ready().catch(() => undefined)
      throw await explainFailure(turn, error, turn.ledger.handle?.id ?? '')
    }
    if (result === undefined) return run()
    // A code cell's report is made by the time the caller has the result (it reads its notice then).
    if (waitReport) await turn.ready().catch(() => undefined)
    return result
  })()
}

/**
 * What a failed sandbox call of this turn should say. A lost lease explains any failure. A sandbox that
 * stopped answering (timeout, not found, unavailable) may have been paused by another process: the
 * platform says so only through its info (one call, on this error path only), and then the error says
 * SANDBOX_PAUSED rather than a misleading timeout or not-found.
 */
async function explainFailure(turn: HandleTurn, error: unknown, sandboxId: string): Promise<unknown> {
  const lost = turn.lease.lost
  if (lost) return lost
  const { provider } = turn
  if (
    typeof provider.getInfo !== 'function' ||
    !(
      SandkeepError.hasCode(error, 'TIMEOUT') ||
      SandkeepError.hasCode(error, 'SANDBOX_NOT_FOUND') ||
      SandkeepError.hasCode(error, 'SANDBOX_UNAVAILABLE')
    )
  ) {
    return error
  }
  const info = await provider.getInfo(sandboxId).catch(() => undefined)
  if (info?.state !== 'paused') return error
  return new SandkeepError({
    code: 'SANDBOX_PAUSED',
    message: `Sandbox ${sandboxId} was paused by someone else while this turn was using it (another process ended its turn, or this turn's lease lapsed); it still exists. End this turn and begin a new one, which resumes it.`,
    tenant: turn.key.tenant,
    conversationId: turn.key.conversationId,
    sandboxId,
    cause: error,
  })
}

/**
 * The provider's handle, noting on the ledger every call that can change its process list (whoever makes
 * it: the user, a repair, a journal replay). Methods run bound to the provider's own object. A method the
 * handle holds frozen (non-configurable, read-only) must be returned as is: reading one that can change
 * the list then counts as a change.
 */
export function watchProcessCalls(
  handle: SandboxHandle,
  ledger: Pick<TurnLedger, 'noteProcessChange'>,
): SandboxHandle {
  const onChange = () => ledger.noteProcessChange()
  const changing = new Set<PropertyKey>(['startProcess', 'killProcess', 'runCommand'])
  return new Proxy(handle, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target)
      if (property === 'native') onChange()
      if (typeof value !== 'function') return value
      const own = Reflect.getOwnPropertyDescriptor(target, property)
      const frozen = own !== undefined && !own.configurable && !own.writable
      if (!changing.has(property)) return frozen ? value : value.bind(target)
      if (frozen) {
        onChange()
        return value
      }
      return (...args: unknown[]) => {
        onChange()
        return value.apply(target, args)
      }
    },
  })
}
