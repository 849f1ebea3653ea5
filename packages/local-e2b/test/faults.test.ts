// Every fault the host can inject, each observed through the real SDK, and recorded in host.events.
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { restartHost, useTestHost } from './helpers.js'

describe('fault injection', () => {
  const t = useTestHost()

  const triggered = (operation: string) =>
    t.host.events.list({ type: 'fault-trigger' }).filter((event) => event.detail.operation === operation)

  it('fails the next create with the given status and body, then creates again', async () => {
    t.host.faults.failNext('create', { status: 503, body: { code: 503, message: 'busy, injected' } })
    await expect(Sandbox.create(t.opts)).rejects.toThrow(/busy, injected|503/)
    expect(triggered('create')).toHaveLength(1)
    const sandbox = await Sandbox.create(t.opts)
    expect(await sandbox.isRunning()).toBe(true)
    await sandbox.kill()
  })

  it('fails connect N times (through the /_local admin route)', async () => {
    const sandbox = await Sandbox.create(t.opts)
    await sandbox.pause()
    const response = await fetch(`${t.host.apiUrl}/_local/faults/fail`, {
      method: 'POST',
      headers: { 'x-api-key': t.host.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ operation: 'connect', count: 2, status: 500, sandboxId: sandbox.sandboxId }),
    })
    expect(response.status).toBe(204)
    await expect(Sandbox.connect(sandbox.sandboxId, t.opts)).rejects.toMatchObject({ name: 'SandboxError' })
    await expect(Sandbox.connect(sandbox.sandboxId, t.opts)).rejects.toMatchObject({ name: 'SandboxError' })
    expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('paused')
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect(await resumed.isRunning()).toBe(true)
    const wrongKey = await fetch(`${t.host.apiUrl}/_local/faults/fail`, {
      method: 'POST',
      headers: { 'x-api-key': 'e2b_not_the_key', 'content-type': 'application/json' },
      body: JSON.stringify({ operation: 'connect' }),
    })
    expect(wrongKey.status).toBe(401)
    await resumed.kill()
  })

  it('fails pause, kill and setTimeout as the SDK reads them', async () => {
    const sandbox = await Sandbox.create(t.opts)
    t.host.faults.failNext('pause', {
      status: 409,
      body: { code: 409, message: 'already paused (injected)' },
    })
    expect(await sandbox.pause()).toBe(false)
    expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('running')
    t.host.faults.failNext('setTimeout', { status: 500 })
    await expect(sandbox.setTimeout(60_000)).rejects.toMatchObject({ name: 'SandboxError' })
    t.host.faults.failNext('kill', { status: 404, body: { code: 404, message: 'not found (injected)' } })
    expect(await sandbox.kill()).toBe(false)
    expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('running')
    expect(await sandbox.kill()).toBe(true)
    expect(triggered('pause')).toHaveLength(1)
    expect(triggered('kill')).toHaveLength(1)
    expect(triggered('setTimeout')).toHaveLength(1)
  })

  it('fails envd calls and adds latency', async () => {
    const sandbox = await Sandbox.create(t.opts)
    t.host.faults.failNext('envd', { status: 503, sandboxId: sandbox.sandboxId })
    await expect(sandbox.files.read('/home/user/x')).rejects.toThrow()
    expect((await sandbox.commands.run('echo ok')).stdout).toBe('ok\n')
    t.host.faults.addLatency('connect', 300, { count: 1 })
    const started = performance.now()
    await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect(performance.now() - started).toBeGreaterThanOrEqual(290)
    expect(
      t.host.events.list({ type: 'fault-trigger' }).some((event) => event.detail.fault === 'latency'),
    ).toBe(true)
    await sandbox.kill()
  })

  it('fails code-interpreter executions (port 49999)', async () => {
    const sandbox = await CodeSandbox.create({ ...t.opts, template: 'code-interpreter-v1' } as never)
    t.host.faults.failNext('execute', { status: 500, body: { message: 'kernel crashed (injected)' } })
    await expect(sandbox.runCode('1 + 1')).rejects.toThrow()
    expect(triggered('execute')).toHaveLength(1)
    await sandbox.kill()
  })

  it('expires a paused sandbox now', async () => {
    const sandbox = await Sandbox.create(t.opts)
    await sandbox.pause()
    await t.host.faults.expire(sandbox.sandboxId)
    await expect(Sandbox.connect(sandbox.sandboxId, t.opts)).rejects.toMatchObject({
      name: 'SandboxNotFoundError',
    })
    expect(t.host.events.list({ type: 'sandbox-expire', sandboxId: sandbox.sandboxId })).toHaveLength(1)
  })

  it('drops a sandbox memory: processes gone, files kept', async () => {
    const sandbox = await Sandbox.create(t.opts)
    await sandbox.files.write('/home/user/kept.txt', 'yes')
    const sleeper = await sandbox.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    await t.host.faults.dropMemory(sandbox.sandboxId)
    expect(await sandbox.commands.list()).toEqual([])
    await expect(sleeper.wait()).rejects.toThrow()
    expect(await sandbox.files.read('/home/user/kept.txt')).toBe('yes')
    expect((await sandbox.commands.run('echo fresh')).stdout).toBe('fresh\n')
    expect(
      t.host.events
        .list({ type: 'fault-trigger', sandboxId: sandbox.sandboxId })
        .some((e) => e.detail.fault === 'drop-memory'),
    ).toBe(true)
    await sandbox.kill()
  })

  it('kills one process', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const first = await sandbox.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    const second = await sandbox.commands.run('sleep 601', { background: true, timeoutMs: 0 })
    const response = await fetch(`${t.host.apiUrl}/_local/sandboxes/${sandbox.sandboxId}/kill-process`, {
      method: 'POST',
      headers: { 'x-api-key': t.host.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ pid: first.pid }),
    })
    expect(await response.json()).toEqual({ pid: first.pid })
    await expect(first.wait()).rejects.toThrow()
    const pids = (await sandbox.commands.list()).map((process) => process.pid)
    expect(pids).toEqual([second.pid])
    await sandbox.kill()
  })

  it('restarts the host on the same stateDir and port: sandboxes come back paused with files', async () => {
    const sandbox = await Sandbox.create(t.opts)
    await sandbox.files.write('/home/user/across-restart.txt', 'disk')
    const sleeper = await sandbox.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    await restartHost(t)
    expect((await Sandbox.getInfo(sandbox.sandboxId, t.opts)).state).toBe('paused')
    const back = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect(await back.files.read('/home/user/across-restart.txt')).toBe('disk')
    expect((await back.commands.list()).map((process) => process.pid)).not.toContain(sleeper.pid)
    await back.kill()
  })

  it('makes the next connect return a different sandbox id; the old id then 404s', async () => {
    const tag = `moved-${Math.random().toString(36).slice(2, 8)}`
    const sandbox = await Sandbox.create({ ...t.opts, metadata: { tag } })
    await sandbox.files.write('/home/user/who.txt', 'same sandbox')
    await sandbox.pause()
    t.host.faults.changeIdOnNextConnect(sandbox.sandboxId)
    // The SDK keeps the id it asked for (it ignores the sandboxID of the answer), so the handle it returns
    // points at an id that no longer exists: that is what a client sees on a platform that re-keys.
    const stale = await Sandbox.connect(sandbox.sandboxId, t.opts)
    await expect(stale.commands.run('true')).rejects.toThrow()
    await expect(Sandbox.getInfo(sandbox.sandboxId, t.opts)).rejects.toMatchObject({
      name: 'SandboxNotFoundError',
    })
    const change = t.host.events
      .list({ type: 'fault-trigger' })
      .find((event) => event.detail.fault === 'change-id')
    const newId = String(change?.detail.newSandboxId)
    expect(newId).not.toBe(sandbox.sandboxId)
    const listed = await Sandbox.list({ ...t.opts, query: { metadata: { tag } } }).nextItems()
    expect(listed.map((item) => item.sandboxId)).toEqual([newId])
    const moved = await Sandbox.connect(newId, t.opts)
    expect(await moved.files.read('/home/user/who.txt')).toBe('same sandbox')
    await moved.kill()
  })

  it('serves every sandbox fault and the introspection over /_local/', async () => {
    const admin = (path: string, body?: unknown, method = 'POST') =>
      fetch(`${t.host.apiUrl}/_local/${path}`, {
        method,
        headers: { 'x-api-key': t.host.apiKey, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    const sandbox = await Sandbox.create(t.opts)
    await sandbox.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    const view = (await (await admin(`sandboxes/${sandbox.sandboxId}`, undefined, 'GET')).json()) as {
      state: string
      processes: unknown[]
    }
    expect(view.state).toBe('running')
    expect(view.processes).toHaveLength(1)
    expect((await admin(`sandboxes/${sandbox.sandboxId}/drop-memory`)).status).toBe(204)
    expect(await sandbox.commands.list()).toEqual([])
    expect((await admin('faults/latency', { operation: 'pause', ms: 50, count: 1 })).status).toBe(204)
    expect((await admin('faults/fail', { operation: 'nope' })).status).toBe(400)
    await sandbox.pause()
    expect(
      (await admin(`sandboxes/${sandbox.sandboxId}/change-id`, { newId: `moved${sandbox.sandboxId}` }))
        .status,
    ).toBe(204)
    await Sandbox.connect(sandbox.sandboxId, t.opts)
    const movedId = `moved${sandbox.sandboxId}`
    await expect(Sandbox.getInfo(sandbox.sandboxId, t.opts)).rejects.toMatchObject({
      name: 'SandboxNotFoundError',
    })
    await Sandbox.pause(movedId, t.opts)
    expect((await admin(`sandboxes/${movedId}/expire`)).status).toBe(204)
    await expect(Sandbox.connect(movedId, t.opts)).rejects.toMatchObject({ name: 'SandboxNotFoundError' })
    expect((await admin(`sandboxes/${movedId}/expire`)).status).toBe(404)
    const events = (await (await admin(`events?type=fault-inject`, undefined, 'GET')).json()) as Array<{
      detail: { fault: string }
    }>
    expect(events.map((event) => event.detail.fault)).toEqual(
      expect.arrayContaining(['drop-memory', 'latency', 'change-id', 'expire']),
    )
  })
})
