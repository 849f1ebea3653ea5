// The store conformance suite's original entry, kept for its callers: the same call shape, run on the test
// functions passed in `options.testApi` or else the running test runner's (see runnerTestApi).
import type { StoreConformanceOptions as AreaOptions, MakeSessionStore } from './store-conformance/context.js'
import { storeConformance } from './store-conformance/index.js'
import { runnerTestApi, type StoreConformanceTestApi } from './test-api.js'

export type { MakeSessionStore, SessionStoreConformanceSettings } from './store-conformance/context.js'

/** Options of {@link sessionStoreConformance}: the backend hooks, and the test functions to use. */
export interface SessionStoreConformanceOptions extends AreaOptions {
  /** The test runner's functions; default the running vitest's (or jest's globals). */
  testApi?: StoreConformanceTestApi
}

/**
 * Registers tests that check a {@link SessionStore} against the v1 contract: leases, fencing,
 * single-flight creation, compare-and-set, tenants, hostile ids, listing, journal, delete, TTL, input
 * validation, and checkpoints, rewind and fork (for a store with them: see the `branching` option). Call it at the top level of a test file with a factory that makes a fresh store:
 *
 * ```ts
 * sessionStoreConformance('memory', (settings) => createMemorySessionStore(settings))
 * ```
 *
 * Every test uses its own random tenant, so stores may share one backend. Without `options.testApi` it
 * needs to run under vitest (an optional peer) or jest; {@link storeConformance} is the same suite, by area.
 */
export function sessionStoreConformance(
  name: string,
  makeStore: MakeSessionStore,
  options: SessionStoreConformanceOptions = {},
): void {
  const { testApi, ...hooks } = options
  storeConformance(testApi ?? runnerTestApi('sessionStoreConformance'), { name, makeStore, ...hooks })
}
