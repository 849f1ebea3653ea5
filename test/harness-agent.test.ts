// The AI SDK harness's own agent loop (HarnessAgent, with a scripted adapter standing in for a coding-agent
// runtime) on sandkeep's harness provider, against a real local-e2b host through the unmodified E2B SDK and
// sessions in the real Redis. Three turns of one conversation: the first starts a web server and hands out
// its URL, which this process opens as a browser would; the sandbox is paused between turns; the second
// finds the server kept; before the third the host restarts (processes die), and a second manager (another
// process's view: its own Redis client, provider and caches) resumes the same sandbox, whose port check
// repairs the server, so the URL answers again.
import { randomInt, randomUUID } from 'node:crypto'
import { HarnessAgent } from '@ai-sdk/harness/agent'
import type { PreviewUrlToolResult } from '@sandkeep/ai-sdk'
import {
  createSandkeepHarnessProvider,
  harnessSandboxTools,
  type SandkeepHarnessProvider,
  type SandkeepNetworkSandboxSession,
} from '@sandkeep/ai-sdk/harness'
import { createSessionManager, portCheck, type SessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createRedisSessionStore } from '@sandkeep/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { browserGet } from './helpers/browser-fetch.js'
import { createScriptedHarness, type ScriptedTurn } from './helpers/scripted-harness.js'
import { REDIS_URL } from './helpers/sessions.js'

const PAGE = '<h1>sales dashboard</h1>'
/** The adapter's bootstrap: a bridge file and an install step that counts its runs. */
const BOOTSTRAP = {
  harnessId: 'scripted',
  bootstrapDir: '.scripted-bridge',
  files: [{ path: '.scripted-bridge/bridge.txt', content: 'bridge v1' }],
  commands: [{ command: 'echo ran >> /home/user/bootstrap-runs.log' }],
}

/** The conversation's model: builds and serves a page in turn 1, checks on it later. */
function script(port: number, serve: string): (prompt: string) => ScriptedTurn {
  const preview = { toolName: 'previewUrl', input: { port } }
  const urlOf = (results: unknown[]) => (results.at(-1) as PreviewUrlToolResult).url
  return (prompt) =>
    prompt.startsWith('Build')
      ? {
          steps: [
            () => ({ toolName: 'writeFile', input: { path: 'site/index.html', content: PAGE, setup: true } }),
            () => ({ toolName: 'runCommand', input: { command: serve, background: true } }),
            () => preview,
          ],
          text: (results) => `Your dashboard is at ${urlOf(results)}`,
        }
      : {
          steps: [() => preview],
          text: (results) =>
            (results.at(-1) as PreviewUrlToolResult).listening
              ? `It is still up at ${urlOf(results)}`
              : 'The server is down.',
        }
}

/** The URL the model's answer hands to the user. */
function urlIn(text: string): string {
  const url = /https?:\/\/\S+/.exec(text)?.[0]
  if (!url) throw new Error(`no URL in the answer: ${text}`)
  return url
}

describe('HarnessAgent on createSandkeepHarnessProvider (local-e2b, Redis)', () => {
  let host: LocalE2BHost
  const prefix = `sandkeep-harness-${randomUUID().slice(0, 8)}`
  const tenant = `harness-${randomUUID().slice(0, 8)}`
  const stores: Array<ReturnType<typeof createRedisSessionStore>> = []
  const port = randomInt(20_000, 40_000)
  const serve = `python3 -m http.server ${port} --directory /home/user/site`

  /** A manager as a separate process would have one: its own Redis client and provider. */
  function manager(onTurnEnd: 'pause' | 'auto-pause' = 'pause'): SessionManager {
    const store = createRedisSessionStore({ redis: REDIS_URL, prefix, ttlMs: 15 * 60_000 })
    stores.push(store)
    return createSessionManager({
      store,
      provider: createE2BProvider({ apiKey: host.apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }),
      onTurnEnd,
      idleTimeoutMs: 1_000,
      ttlMs: 15 * 60_000,
      retry: { retries: 4, minTimeoutMs: 20, maxTimeoutMs: 200 },
      healthChecks: [
        portCheck({
          name: 'site',
          port,
          path: '/',
          timeoutMs: 15_000,
          repair: { command: serve, background: true },
        }),
      ],
    })
  }

  /** A HarnessAgent on a provider of `sessions`; `opened` collects the network sessions it hands out. */
  function agentOn(sessions: SessionManager) {
    const harness = createScriptedHarness(script(port, serve), BOOTSTRAP)
    const provider = createSandkeepHarnessProvider({ sessions, tenant, ports: [port] })
    const opened: SandkeepNetworkSandboxSession[] = []
    const watched: SandkeepHarnessProvider = {
      ...provider,
      createSession: async (options) => collect(await provider.createSession(options)),
      resumeSession: async (options) => collect(await provider.resumeSession(options)),
    }
    const collect = (session: SandkeepNetworkSandboxSession) => {
      opened.push(session)
      return session
    }
    const agent = new HarnessAgent({
      harness,
      sandbox: watched,
      tools: harnessSandboxTools({ previewWaitMs: 10_000 }),
      // The app's own one-time setup, which HarnessAgent runs only through the provider's onFirstCreate.
      sandboxConfig: {
        bootstrapHash: 'seed-v1',
        onBootstrap: async ({ session }) => {
          await session.writeTextFile({ path: '/home/user/seed.txt', content: 'seeded' })
        },
      },
    })
    return { agent, harness, opened, last: () => opened.at(-1) as SandkeepNetworkSandboxSession }
  }

  beforeAll(async () => {
    host = await startLocalE2B({ logger: () => {} })
  })
  afterAll(async () => {
    const cleanup = manager()
    const page = await cleanup.listSessions({ tenant }).catch(() => ({ sessions: [] }))
    for (const session of page.sessions) {
      await cleanup.endSession(session.conversationId, { tenant }).catch(() => false)
    }
    for (const store of stores) await store.close()
    await host.close()
  })

  it('serves a page from turn 1, keeps it through a pause, and repairs it after a host restart in another manager', async () => {
    const conversation = `conv-${randomUUID()}`
    const first = agentOn(manager())

    // Turn 1: the sandbox is created, the model starts the server and hands out its URL.
    const turn1 = await first.agent.createSession({ sessionId: conversation })
    const sandbox1 = first.last()
    expect(sandbox1.report.outcome).toBe('created')
    // The agent's bootstrap ran once, as the sandbox's onFirstCreate.
    expect(sandbox1.firstCreateRan).toBe(true)
    expect(await sandbox1.readTextFile({ path: '/home/user/seed.txt' })).toBe('seeded')
    expect(sandbox1.tenant).toBe(tenant)
    expect(sandbox1.ports).toEqual([port])
    const answer1 = await first.agent.generate({ session: turn1, prompt: 'Build me a sales dashboard' })
    const url = urlIn(answer1.text)
    expect(url).toBe(`http://${port}-${sandbox1.id}.${host.domain}`)
    expect(await browserGet(`${url}/`)).toEqual({ status: 200, body: PAGE })
    // A program reaches it as the harness's bridge would: the endpoint's URL with its headers.
    const endpoint = await sandbox1.getPortEndpoint({ port })
    const routed = await fetch(`${endpoint.url}/`, { headers: endpoint.headers })
    expect([routed.status, await routed.text()]).toEqual([200, PAGE])
    const resumeFrom1 = await turn1.stop()
    expect(sandbox1.endReport?.action).toBe('paused')
    expect(host.getSandbox(sandbox1.id)?.state).toBe('paused')
    // Paused without auto-resume, the URL says so, as E2B's edge does.
    expect((await browserGet(`${url}/`)).status).toBe(502)

    // Turn 2: the same manager resumes the sandbox; memory kept, the server still runs and answers.
    const turn2 = await first.agent.createSession({ sessionId: conversation, resumeFrom: resumeFrom1 })
    const sandbox2 = first.last()
    expect(sandbox2.id).toBe(sandbox1.id)
    expect(sandbox2.report.outcome).toBe('resumed')
    expect(sandbox2.firstCreateRan).toBe(false)
    expect(sandbox2.report.checks.find((check) => check.name === 'site')?.status).toBe('passed')
    const answer2 = await first.agent.generate({ session: turn2, prompt: 'Is my dashboard still up?' })
    expect(answer2.text).toBe(`It is still up at ${url}`)
    expect(await browserGet(`${url}/`)).toEqual({ status: 200, body: PAGE })
    const resumeFrom2 = await turn2.stop()
    expect(host.getSandbox(sandbox1.id)?.state).toBe('paused')

    // The host restarts: its processes die, the sandbox comes back paused with its files.
    await host.faults.restart()

    // Turn 3, in another manager: the same sandbox, its server repaired by the port check.
    const second = agentOn(manager())
    const turn3 = await second.agent.createSession({ sessionId: conversation, resumeFrom: resumeFrom2 })
    const sandbox3 = second.last()
    expect(sandbox3.id).toBe(sandbox1.id)
    expect(sandbox3.report.outcome).toBe('resumed')
    expect(sandbox3.report.survived.processes).toBe(false)
    expect(sandbox3.report.checks.find((check) => check.name === 'site')?.status).toBe('repaired')
    const answer3 = await second.agent.generate({ session: turn3, prompt: 'And now?' })
    expect(answer3.text).toBe(`It is still up at ${url}`)
    expect(await browserGet(`${url}/`)).toEqual({ status: 200, body: PAGE })
    expect(second.harness.log.starts.map((start) => start.resumed)).toEqual([true])
    // The restart kept the files, the bootstrap's among them: it did not run again.
    expect(sandbox3.firstCreateRan).toBe(false)
    expect(await sandbox3.readTextFile({ path: '/home/user/bootstrap-runs.log' })).toBe('ran\n')
    await turn3.destroy()
    expect(host.getSandbox(sandbox1.id)).toBeUndefined()
    expect(
      await second.agent.createSession({ sessionId: conversation, resumeFrom: resumeFrom2 }).catch((e) => e),
    ).toMatchObject({ code: 'SANDBOX_NOT_FOUND' })
  }, 180_000)

  it('a resume after the sandbox expired recreates it: bootstrap again, the page from the journal, the server repaired', async () => {
    const conversation = `conv-${randomUUID()}`
    const { agent, last } = agentOn(manager())
    const session = await agent.createSession({ sessionId: conversation })
    const before = last()
    const oldUrl = urlIn((await agent.generate({ session, prompt: 'Build me a sales dashboard' })).text)
    const resumeFrom = await session.stop()
    await host.faults.expire(before.id)

    const again = await agent.createSession({ sessionId: conversation, resumeFrom })
    const after = last()
    expect(after.report.outcome).toBe('recreated')
    expect(after.report.stateLost).toBe(true)
    expect(after.id).not.toBe(before.id)
    // The journal has no record of what the bootstrap did: it ran again on the new sandbox.
    expect(after.firstCreateRan).toBe(true)
    expect(await after.readTextFile({ path: '/home/user/bootstrap-runs.log' })).toBe('ran\n')
    expect(await after.readTextFile({ path: '/home/user/seed.txt' })).toBe('seeded')
    expect(after.report.checks.find((check) => check.name === 'site')?.status).toBe('repaired')
    const answer = await agent.generate({ session: again, prompt: 'Is my dashboard still up?' })
    const newUrl = urlIn(answer.text)
    expect(newUrl).toBe(`http://${port}-${after.id}.${host.domain}`)
    expect(newUrl).not.toBe(oldUrl)
    expect(await browserGet(`${newUrl}/`)).toEqual({ status: 200, body: PAGE })
    await again.destroy()
  }, 120_000)

  it('with auto-pause, a request to the URL of a paused sandbox wakes it', async () => {
    const conversation = `conv-${randomUUID()}`
    const { agent, last } = agentOn(manager('auto-pause'))
    const session = await agent.createSession({ sessionId: conversation })
    const sandbox = last()
    const url = urlIn((await agent.generate({ session, prompt: 'Build me a sales dashboard' })).text)
    await session.stop()
    expect(sandbox.endReport?.action).toBe('auto-pause')
    // The platform pauses it once its idle second is over.
    for (let i = 0; i < 300 && host.getSandbox(sandbox.id)?.state !== 'paused'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(host.getSandbox(sandbox.id)?.state).toBe('paused')
    expect(await browserGet(`${url}/`)).toEqual({ status: 200, body: PAGE })
    expect(host.getSandbox(sandbox.id)?.state).toBe('running')
    const resumes = host.events.list({ type: 'sandbox-resume', sandboxId: sandbox.id })
    expect(resumes.at(-1)?.detail).toMatchObject({ reason: 'auto-resume' })
  }, 120_000)
})
