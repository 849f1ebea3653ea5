import type {
  AcquireResult,
  Lease,
  ReleaseInput,
  ReleaseResult,
  SessionStore,
} from '../contract/session-store.js'
import type { SandkeepMetrics } from './metrics.js'
import { failSpan, sessionAttributes, type Tracing } from './tracer.js'

/** Every call of the `SessionStore` contract; each gets a `sandkeep.store.<method>` span. */
export const STORE_METHODS: readonly string[] = [
  'acquire',
  'renew',
  'claimCreation',
  'setSandbox',
  'release',
  'releaseHold',
  'setState',
  'get',
  'delete',
  'list',
  'appendJournal',
  'readJournal',
  'clearJournal',
  'now',
  'readCheckpoints',
  'rewind',
  'createFork',
  'close',
]
// Holders whose release this process has not seen yet; bounded so turns that never end cannot grow it forever.
const PENDING_LIMIT = 10_000

/**
 * The store as the manager uses it: each call traced as a child of the span active at the call, and the
 * release's running/paused time fed to the metrics. Returns `store` itself when there is nothing to do.
 */
export function instrumentStore(
  store: SessionStore,
  tracing: Tracing | undefined,
  metrics: SandkeepMetrics | undefined,
): SessionStore {
  if (!tracing && !metrics) return store
  // The record's runningSeconds when each holder acquired: only a last release adds to it, and no other turn
  // can be last while this holder holds the session, so the difference at release is this turn's share.
  const runningAtAcquire = new Map<string, number>()
  const account = (method: string, args: unknown[], result: unknown): void => {
    if (!metrics) return
    if (method === 'acquire') {
      const acquired = result as AcquireResult
      if (runningAtAcquire.size >= PENDING_LIMIT) {
        const oldest = runningAtAcquire.keys().next().value
        if (oldest !== undefined) runningAtAcquire.delete(oldest)
      }
      runningAtAcquire.set(acquired.lease.holderId, acquired.record?.runningSeconds ?? 0)
    } else if (method === 'release') {
      const [key, lease, input] = args as [{ tenant: string }, Lease, ReleaseInput]
      const released = result as ReleaseResult
      const before = runningAtAcquire.get(lease.holderId)
      runningAtAcquire.delete(lease.holderId)
      const running =
        released.last && released.record && before !== undefined
          ? Math.max(0, released.record.runningSeconds - before)
          : 0
      metrics.accounted(key.tenant, running, input.pausedSeconds ?? 0)
    }
  }
  // Methods shadowed on an object that inherits the rest (storeId, optional extras), not a Proxy: a Proxy must
  // return a frozen store's own methods as they are, so it could not wrap them.
  const instrumented = Object.create(store) as SessionStore
  for (const method of STORE_METHODS) {
    if (typeof Reflect.get(store, method) !== 'function') continue
    const wrapper = async (...args: unknown[]) => {
      // Read at each call: a store whose method is replaced later (a test's fault injection) stays in effect.
      const call = Reflect.get(store, method) as (...args: unknown[]) => Promise<unknown>
      if (!tracing?.enabled()) {
        const result: unknown = await call.apply(store, args)
        account(String(method), args, result)
        return result
      }
      const { api, tracer } = tracing
      const parent = api.context.active()
      const span = tracer.startSpan(
        `sandkeep.store.${String(method)}`,
        { attributes: { 'sandkeep.store.id': store.storeId, ...sessionAttributes(args[0]) } },
        parent,
      )
      try {
        const result: unknown = await api.context.with(api.trace.setSpan(parent, span), () =>
          call.apply(store, args),
        )
        account(String(method), args, result)
        return result
      } catch (error) {
        failSpan(span, error)
        throw error
      } finally {
        span.end()
      }
    }
    Object.defineProperty(instrumented, method, { value: wrapper, enumerable: true })
  }
  return instrumented
}
