import { retryProviderCall } from '../contract/retry.js'
import type { SandboxProvider } from '../contract/sandbox-provider.js'
import type { SessionManagerEvents, SessionManagerOptions } from '../contract/session-manager-types.js'
import type { SessionStore } from '../contract/session-store.js'
import type { SessionKey } from '../contract/validation.js'
import { createEventHub, type EventHub } from '../telemetry/events.js'
import { createManagerTelemetry, type ManagerTelemetry } from '../telemetry/index.js'
import { type ResolvedOptions, resolveOptions } from './options.js'
import { SessionState } from './session-state.js'

/**
 * What every module of the manager works with, built once by createSessionManager: the checked options,
 * the (instrumented) store, the provider, the event hub, this process's session state and the telemetry hooks.
 */
export interface ManagerContext {
  readonly config: ResolvedOptions
  /** The store wrapped for telemetry (the same object when telemetry is off). */
  readonly store: SessionStore
  readonly provider: SandboxProvider
  readonly events: EventHub<SessionManagerEvents>
  /** What this process knows of its sessions (caches, live turns, waits): the only owner of that state. */
  readonly state: SessionState
  readonly telemetry: ManagerTelemetry
  /** Emits the `error` event: the way every failure that does not fail the call is reported. */
  emitError(phase: string, error: unknown, key?: SessionKey): void
  /** A provider call retried by the configured policy. */
  call<T>(operation: () => Promise<T>, options?: { signal?: AbortSignal; onRetry?: () => void }): Promise<T>
}

/**
 * Checks the options and builds the context. A listener that throws is reported as an `error` event with
 * phase `listener:<event>` (see createEventHub for a throwing `error` listener).
 * @throws SandkeepError INVALID_ARGUMENT, CAPABILITY_UNSUPPORTED (see resolveOptions)
 */
export function createManagerContext(options: SessionManagerOptions): ManagerContext {
  const config = resolveOptions(options)
  const emitError = (phase: string, error: unknown, key?: SessionKey) => {
    events.emit('error', {
      ...(key ? { conversationId: key.conversationId, tenant: key.tenant } : {}),
      error,
      phase,
    })
  }
  const events: EventHub<SessionManagerEvents> = createEventHub<SessionManagerEvents>((error, event) =>
    emitError(`listener:${String(event)}`, error),
  )
  const telemetry = createManagerTelemetry(options.telemetry, events.on)
  return {
    config,
    store: telemetry.instrumentStore(config.store),
    provider: config.provider,
    events,
    state: new SessionState(),
    telemetry,
    emitError,
    call: (operation, callOptions = {}) => retryProviderCall(operation, config.retry, callOptions),
  }
}
