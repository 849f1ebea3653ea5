// The SessionStore conformance kit, composable as keyv's `storageTestSuite` is: one module per area of the
// contract, each a function of a context made from the caller's test functions, so this import loads no
// test runner. `storeConformance(api, run)` registers every area; `storeConformance.acquire(context)` one.

import type { StoreConformanceTestApi } from '../test-api.js'
import { accountingConformance } from './accounting.js'
import { acquireConformance } from './acquire.js'
import { branchingConformance } from './branching.js'
import { clockConformance } from './clock.js'
import {
  createStoreConformanceContext,
  type MakeSessionStore,
  type StoreConformanceContext,
  type StoreConformanceOptions,
} from './context.js'
import { corruptionConformance } from './corruption.js'
import { creationConformance } from './creation.js'
import { holdConformance } from './hold.js'
import { journalConformance } from './journal.js'
import { keysConformance } from './keys.js'
import { ledgerConformance } from './ledger.js'
import { lifecycleConformance } from './lifecycle.js'
import { listConformance } from './list.js'
import { manifestConformance } from './manifest.js'
import { releaseConformance } from './release.js'
import { setSandboxConformance } from './set-sandbox.js'
import { stateConformance } from './state.js'
import { ttlConformance } from './ttl.js'
import { validationConformance } from './validation.js'

export {
  type CorruptibleRecordField,
  createStoreConformanceContext,
  type StoreConformanceContext,
  type StoreConformanceOptions,
} from './context.js'

/** Every area of the store contract, in the order a full run registers them. */
export const storeConformanceAreas = {
  lifecycle: lifecycleConformance,
  acquire: acquireConformance,
  setSandbox: setSandboxConformance,
  release: releaseConformance,
  hold: holdConformance,
  manifest: manifestConformance,
  accounting: accountingConformance,
  creation: creationConformance,
  state: stateConformance,
  keys: keysConformance,
  list: listConformance,
  journal: journalConformance,
  ttl: ttlConformance,
  clock: clockConformance,
  branching: branchingConformance,
  ledger: ledgerConformance,
  validation: validationConformance,
  corruption: corruptionConformance,
} satisfies Record<string, (context: StoreConformanceContext) => void>

/** The name of one area of {@link storeConformanceAreas}. */
export type StoreConformanceArea = keyof typeof storeConformanceAreas

/** One run of {@link storeConformance}: which store, and optionally which areas. */
export interface StoreConformanceRun extends StoreConformanceOptions {
  /** Suite name, e.g. `'redis (standalone)'`. */
  name: string
  /** Makes a fresh store for one test. */
  makeStore: MakeSessionStore
  /** The areas to run; default all. */
  areas?: readonly StoreConformanceArea[]
}

function runStoreConformance(api: StoreConformanceTestApi, run: StoreConformanceRun): void {
  const areas = run.areas ?? (Object.keys(storeConformanceAreas) as StoreConformanceArea[])
  api.describe(`SessionStore conformance: ${run.name}`, () => {
    const { name: _name, makeStore, areas: _areas, ...options } = run
    const context = createStoreConformanceContext(api, makeStore, options)
    for (const area of areas) storeConformanceAreas[area](context)
  })
}

/**
 * Registers the SessionStore conformance suite with the given test functions, e.g. vitest's:
 *
 * ```ts
 * import { afterEach, describe, expect, test } from 'vitest'
 * storeConformance({ describe, test, expect, afterEach }, { name: 'mine', makeStore: (s) => createMine(s) })
 * ```
 *
 * Each area is also a property, to run one alone with a context: `storeConformance.acquire(context)`, the
 * context made by {@link createStoreConformanceContext} inside your own `describe`.
 */
export const storeConformance = Object.assign(runStoreConformance, storeConformanceAreas)
