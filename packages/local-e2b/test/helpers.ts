// Shared setup for the contract tests: a host per file and SDK connection options pointing at it.
import { Sandbox } from 'e2b'
import { type LocalE2BHost, type LocalE2BOptions, startLocalE2B } from '../src/index.js'

export interface TestHost {
  host: LocalE2BHost
  /** Connection options for `Sandbox.create/connect` of the e2b SDKs. */
  opts: { apiKey: string; apiUrl: string; sandboxUrl: string; requestTimeoutMs: number }
}

export async function startTestHost(options: LocalE2BOptions = {}): Promise<TestHost> {
  const host = await startLocalE2B({ logger: () => {}, ...options })
  return {
    host,
    opts: { apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl, requestTimeoutMs: 30_000 },
  }
}

/** Kills every sandbox the host still has (through the SDK, as a user would) and closes the host. */
export async function stopTestHost(t: TestHost | undefined): Promise<void> {
  if (!t) return
  for (const view of t.host.listSandboxes()) await Sandbox.kill(view.sandboxId, t.opts).catch(() => {})
  await t.host.close()
}

export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
