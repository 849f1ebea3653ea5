// What a replay runs on: the session store (asked once before anything starts) and the sandbox platform (an
// embedded local-e2b host or E2B), plus the `demo-start` event that describes them.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SandboxProvider, SessionStore } from '@sandkeep/core'
import { describeE2B, openE2BProvider, openStore, redactUrl } from '../config.js'
import { ConfigError, describeError } from '../errors.js'
import type { DemoEvent, DemoSetup } from './events.js'
import { type EmbeddedHost, startEmbeddedHost } from './host.js'
import type { RunDemoOptions } from './options.js'

/** Steps run in reverse order when the replay ends, whatever happened. */
export type Cleanup = Array<() => Promise<void>>

/** The store and platform of a replay. */
export interface DemoEnvironment {
  /** The session store, reachable. */
  store: SessionStore
  /** The sandbox platform. */
  provider: SandboxProvider
  /** The embedded local host (faults are injected into it); absent with `--provider e2b`. */
  host: EmbeddedHost | undefined
}

/** Opens the store and the platform, registering how to close each in `cleanup`, and emits `demo-start`. */
export async function openDemoEnvironment(
  options: RunDemoOptions,
  cleanup: Cleanup,
): Promise<DemoEnvironment> {
  const { renderer } = options
  // The store is opened and asked once before anything else starts: a REDIS_URL pointing nowhere is a
  // configuration error, reported as such, not a turn that fails halfway and blames the transcript.
  renderer.progress('connecting to the session store')
  const store = await openStore(options.store)
  cleanup.push(() => store.close())
  await checkStoreReachable(store, options)
  const { provider, host, setup } = await openProvider(options, cleanup)
  renderer.progress(null)
  renderer.emit(demoStartEvent(options, setup))
  return { store, provider, host }
}

/** One read of the conversation's record; a store that cannot answer it stops the demo with a ConfigError. */
async function checkStoreReachable(store: SessionStore, options: RunDemoOptions): Promise<void> {
  try {
    await store.get({ tenant: options.tenant, conversationId: options.conversationId })
  } catch (caught) {
    if (options.store.kind !== 'redis') throw caught
    const code = (caught as { code?: unknown })?.code
    const detail = code === 'STORE_UNAVAILABLE' ? '' : ` (${describeError(caught)})`
    throw new ConfigError(
      `the session store is unreachable: Redis at ${redactUrl(options.store.url)} did not answer${detail}. Start Redis, fix REDIS_URL, or unset it to use the memory store. No turn was run.`,
    )
  }
}

async function openProvider(
  options: RunDemoOptions,
  cleanup: Cleanup,
): Promise<{ provider: SandboxProvider; host: EmbeddedHost | undefined; setup: DemoSetup['provider'] }> {
  if (options.provider.kind === 'e2b') {
    const { connection } = options.provider
    return {
      provider: await openE2BProvider(connection),
      host: undefined,
      setup: { kind: 'e2b', apiUrl: describeE2B(connection) },
    }
  }
  options.renderer.progress('starting the local E2B-compatible host')
  const { pauseMode, isolation } = options.provider
  const stateDir = options.provider.stateDir ?? (await mkdtemp(join(tmpdir(), 'sandkeep-demo-')))
  if (!options.provider.stateDir) cleanup.push(() => rm(stateDir, { recursive: true, force: true }))
  const host = await startEmbeddedHost({ pauseMode, stateDir, ...(isolation ? { isolation } : {}) })
  cleanup.push(() => host.close())
  return {
    provider: await openE2BProvider(host.connection),
    host,
    setup: { kind: 'local-e2b', apiUrl: host.connection.apiUrl ?? '', pauseMode, isolation: host.isolation },
  }
}

function demoStartEvent(options: RunDemoOptions, provider: DemoSetup['provider']): DemoEvent {
  const { transcript } = options
  return {
    type: 'demo-start',
    transcript: { file: transcript.file, title: transcript.title, turns: transcript.turns.length },
    conversationId: options.conversationId,
    tenant: options.tenant,
    store:
      options.store.kind === 'memory'
        ? { kind: 'memory' }
        : { kind: 'redis', url: redactUrl(options.store.url), prefix: options.store.prefix },
    provider,
    fault: options.fault,
    idleMs: options.idleMs,
  }
}
