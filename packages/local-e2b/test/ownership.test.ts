// A second API key on the same state dir: after a restart with key B, key A's sandboxes are not found for B on
// every route (404 as E2B answers for another team's sandbox): connect, info, list, pause, timeout, metrics,
// kill, snapshot, fork. The owner is kept in the registry as a hash of the key, never the key.
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { afterAll, describe, expect, it } from 'vitest'
import { rejection, startTestHost, stopTestHost, type TestHost } from './helpers.js'

const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

describe('sandbox ownership across a restart', () => {
  it('key B gets 404 on key A’s sandboxes on every route after a restart; key A still reaches them', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'sk-owner-'))
    dirs.push(stateDir)
    const keyA = `e2b_${randomBytes(16).toString('hex')}`
    const keyB = `e2b_${randomBytes(16).toString('hex')}`
    let a: TestHost | undefined = await startTestHost({ stateDir, apiKey: keyA })
    const sandbox = await Sandbox.create(a.opts)
    const id = sandbox.sandboxId
    await sandbox.files.write('/home/user/secret.txt', 'A only')
    await a.host.close()
    a = undefined

    const registry = readFileSync(join(stateDir, 'registry.json'), 'utf8')
    expect(registry).not.toContain(keyA)
    expect(JSON.parse(registry).sandboxes[0].team).toMatch(/^[0-9a-f]{32}$/)

    const b = await startTestHost({ stateDir, apiKey: keyB })
    try {
      const raw = (method: string, path: string, body?: unknown) =>
        fetch(`${b.host.apiUrl}${path}`, {
          method,
          headers: { 'x-api-key': keyB, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
      for (const [method, path, body] of [
        ['POST', `/v2/sandboxes/${id}/connect`, { timeout: 60 }],
        ['POST', `/sandboxes/${id}/connect`, { timeout: 60 }],
        ['POST', `/sandboxes/${id}/resume`, {}],
        ['GET', `/sandboxes/${id}`, undefined],
        ['POST', `/sandboxes/${id}/pause`, {}],
        ['POST', `/sandboxes/${id}/timeout`, { timeout: 60 }],
        ['GET', `/sandboxes/${id}/metrics`, undefined],
        ['POST', `/sandboxes/${id}/snapshots`, {}],
        ['POST', `/sandboxes/${id}/fork`, {}],
        ['DELETE', `/sandboxes/${id}`, undefined],
        ['GET', `/_local/sandboxes/${id}`, undefined],
      ] as const) {
        const answer = await raw(method, path, body)
        expect({ method, path, status: answer.status }).toEqual({ method, path, status: 404 })
      }
      // Through the SDK, as a user of key B sees it.
      const opts = b.opts
      expect((await rejection(Sandbox.connect(id, opts))).name).toBe('SandboxNotFoundError')
      expect((await rejection(Sandbox.getInfo(id, opts))).name).toBe('SandboxNotFoundError')
      expect((await rejection(Sandbox.fork(id, opts))).message).toMatch(/not found/)
      expect(await Sandbox.kill(id, opts)).toBe(false)
      expect(await Sandbox.list(opts).nextItems()).toEqual([])
      // Key B's own sandboxes are B's.
      const own = await Sandbox.create(opts)
      expect((await Sandbox.list(opts).nextItems()).map((info) => info.sandboxId)).toEqual([own.sandboxId])
      await own.kill()
    } finally {
      await b.host.close()
    }

    const again = await startTestHost({ stateDir, apiKey: keyA })
    try {
      const back = await Sandbox.connect(id, again.opts)
      expect(await back.files.read('/home/user/secret.txt')).toBe('A only')
      expect((await Sandbox.list(again.opts).nextItems()).map((info) => info.sandboxId)).toEqual([id])
    } finally {
      await stopTestHost(again)
    }
  }, 180_000)
})
