// The sandbox lifecycle over the SDK's static calls: create, connect (following a re-mapped id), kill,
// pause, setTimeout, getInfo and list.
import { Sandbox } from '@e2b/code-interpreter'
import {
  type CreateSandboxOptions,
  type SandboxCreateNetwork,
  type SandboxHandle,
  type SandboxInfo,
  type SandboxProvider,
  SandkeepError,
  validateSandboxId,
} from '@sandkeep/core/provider'
import { type ErrorContext, withE2BErrors } from './errors.js'
import { ExecutingSandbox } from './execute.js'
import { handleFor } from './handle.js'
import { type Connection, type OutputLimits, requestOptions } from './options.js'

type Lifecycle = Pick<
  SandboxProvider<Sandbox>,
  'create' | 'connect' | 'kill' | 'pause' | 'setTimeout' | 'getInfo' | 'list'
>

/**
 * Creates a sandbox from a template or a snapshot (E2B takes either as the template) and returns its handle:
 * the one create path behind `create` and `createFromSnapshot`. Errors are converted with `context`.
 */
export function createSandbox(
  connection: Connection,
  limits: OutputLimits,
  template: string,
  createOptions: CreateSandboxOptions,
  context: ErrorContext,
): Promise<SandboxHandle<Sandbox>> {
  return withE2BErrors(context, async () => {
    if (createOptions.secure === false) {
      throw new SandkeepError({
        code: 'CAPABILITY_UNSUPPORTED',
        message:
          "E2B secures every sandbox's envd with its access token (the SDK ignores secure: false): leave secure out or set it to true.",
      })
    }
    const sandbox = await ExecutingSandbox.create(template, {
      ...requestOptions(connection, createOptions.signal),
      metadata: createOptions.metadata,
      ...(createOptions.timeoutMs !== undefined ? { timeoutMs: createOptions.timeoutMs } : {}),
      ...(createOptions.envs ? { envs: createOptions.envs } : {}),
      // sandkeep's default is no internet; the SDK's is on.
      allowInternetAccess: createOptions.allowInternetAccess ?? false,
      ...(createOptions.lifecycle
        ? {
            lifecycle: {
              onTimeout: createOptions.lifecycle.onTimeout,
              autoResume: createOptions.lifecycle.autoResume ?? false,
            },
          }
        : {}),
      ...(createOptions.network ? { network: sdkNetwork(createOptions.network) } : {}),
    })
    return handleFor(sandbox, limits, connection)
  })
}

/** The SDK's create `network` from sandkeep's (only the fields given: the SDK sends what it is handed). */
function sdkNetwork(network: SandboxCreateNetwork) {
  return {
    ...(network.allowPublicTraffic !== undefined ? { allowPublicTraffic: network.allowPublicTraffic } : {}),
    ...(network.allowOut ? { allowOut: [...network.allowOut] } : {}),
    ...(network.denyOut ? { denyOut: [...network.denyOut] } : {}),
    ...(network.maskRequestHost !== undefined ? { maskRequestHost: network.maskRequestHost } : {}),
  }
}

export function lifecycleCalls(connection: Connection, template: string, limits: OutputLimits): Lifecycle {
  /** A call about one existing sandbox: its id is checked before any I/O. */
  const about = <T>(operation: string, sandboxId: string, work: () => Promise<T>) =>
    withE2BErrors({ operation, sandboxId }, async () => {
      validateSandboxId(sandboxId)
      return work()
    })
  return {
    create: (createOptions) =>
      createSandbox(connection, limits, createOptions.template ?? template, createOptions, {
        operation: 'create',
      }),
    connect: (sandboxId, options) =>
      about('connect', sandboxId, async () => {
        const sandbox = await FollowingSandbox.connectFollowingId(sandboxId, {
          ...requestOptions(connection, options?.signal),
          ...(options?.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        })
        return handleFor(sandbox, limits, connection)
      }),
    kill: (sandboxId, options) =>
      about('kill', sandboxId, () => Sandbox.kill(sandboxId, requestOptions(connection, options?.signal))),
    pause: (sandboxId, options) =>
      about('pause', sandboxId, () => Sandbox.pause(sandboxId, requestOptions(connection, options?.signal))),
    setTimeout: (sandboxId, timeoutMs, options) =>
      about('setTimeout', sandboxId, async () => {
        await Sandbox.setTimeout(sandboxId, timeoutMs, requestOptions(connection, options?.signal))
      }),
    getInfo: (sandboxId, options) =>
      about('getInfo', sandboxId, async () =>
        toInfo(await Sandbox.getInfo(sandboxId, requestOptions(connection, options?.signal))),
      ),
    list: (listOptions = {}) =>
      withE2BErrors({ operation: 'list' }, async () => {
        const paginator = Sandbox.list({
          ...connection,
          query: {
            ...(listOptions.metadata ? { metadata: listOptions.metadata } : {}),
            ...(listOptions.state ? { state: listOptions.state } : {}),
          },
          ...(listOptions.limit !== undefined ? { limit: listOptions.limit } : {}),
          ...(listOptions.cursor !== undefined ? { nextToken: listOptions.cursor } : {}),
        })
        const items = await paginator.nextItems(requestOptions(connection, listOptions.signal))
        const cursor = paginator.hasNext ? paginator.nextToken : undefined
        return { sandboxes: items.map(toInfo), ...(cursor ? { cursor } : {}) }
      }),
  }
}

type ConnectOptions = NonNullable<Parameters<typeof Sandbox.connect>[1]>

/**
 * The SDK's `Sandbox.connect` keeps the id it was asked for even when the platform answers with another one
 * (E2B has been seen to re-map a sandbox after repeated pause/resume; local-e2b can inject it). This subclass
 * makes the same connect call and builds the sandbox for the id the platform answered, so that envd calls
 * reach it and the session manager can re-map the session.
 */
class FollowingSandbox extends ExecutingSandbox {
  static async connectFollowingId(sandboxId: string, options: ConnectOptions): Promise<ExecutingSandbox> {
    const resolved = FollowingSandbox.resolveOpts(options) ?? options
    const answer = await FollowingSandbox.connectSandbox(sandboxId, resolved)
    return new ExecutingSandbox({
      ...resolved,
      sandboxId: answer.sandboxId || sandboxId,
      ...(answer.sandboxDomain ? { sandboxDomain: answer.sandboxDomain } : {}),
      envdVersion: answer.envdVersion,
      ...(answer.envdAccessToken ? { envdAccessToken: answer.envdAccessToken } : {}),
      ...(answer.trafficAccessToken ? { trafficAccessToken: answer.trafficAccessToken } : {}),
    })
  }
}

/** The SDK's sandbox info as sandkeep's SandboxInfo. */
function toInfo(raw: {
  sandboxId: string
  templateId?: string
  metadata?: Record<string, string>
  state: string
  startedAt?: Date
  endAt?: Date
}): SandboxInfo {
  return {
    sandboxId: raw.sandboxId,
    ...(raw.templateId ? { templateId: raw.templateId } : {}),
    metadata: { ...(raw.metadata ?? {}) },
    state: raw.state === 'paused' ? 'paused' : 'running',
    ...(raw.startedAt ? { startedAt: new Date(raw.startedAt) } : {}),
    ...(raw.endAt ? { endAt: new Date(raw.endAt) } : {}),
  }
}
