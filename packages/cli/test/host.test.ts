import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, cleanEnv, startCli, waitFor } from './helpers.js'

let stateDir: string
beforeAll(async () => {
  assertBuilt()
  stateDir = await mkdtemp(join(tmpdir(), 'sandkeep-cli-host-'))
})
afterAll(async () => {
  await rm(stateDir, { recursive: true, force: true })
})

describe('sandkeep host', () => {
  it('--isolation none starts an unisolated host, says so, and warns (the escape hatch where bubblewrap is missing)', async () => {
    const host = startCli(['host', '--isolation', 'none'], cleanEnv())
    try {
      const out = await waitFor(() => (host.stdout().includes('Ctrl-C') ? host.stdout() : undefined))
      expect(out).toContain('isolation none')
      expect(host.stderr()).toContain('UNISOLATED')
    } finally {
      expect(await host.stop()).toBe(0)
    }
  })

  it('prints export lines without the key, keeps the key in a 0600 file, serves E2B, stops on SIGINT', async () => {
    const host = startCli(['host', '--state-dir', stateDir, '--pause-mode', 'filesystem'], cleanEnv())
    try {
      const out = await waitFor(() => (host.stdout().includes('Ctrl-C') ? host.stdout() : undefined))
      const exports = Object.fromEntries(
        [...out.matchAll(/^export (E2B_[A-Z_]+)=(.*)$/gm)].map((match) => [match[1], match[2]]),
      )
      expect(Object.keys(exports).sort()).toEqual([
        'E2B_API_KEY',
        'E2B_API_URL',
        'E2B_DOMAIN',
        'E2B_SANDBOX_URL',
      ])
      expect(exports.E2B_API_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const port = new URL(exports.E2B_API_URL as string).port
      // An SDK left to its defaults builds https://api.<E2B_DOMAIN> and <port>-<id>.<E2B_DOMAIN>: this host.
      expect(exports.E2B_DOMAIN).toBe(`localhost:${port}`)
      expect(out).toContain('pause mode filesystem')
      const keyFile = join(stateDir, 'api-key')
      expect(exports.E2B_API_KEY).toBe(`"$(cat ${keyFile})"`)
      expect((await stat(keyFile)).mode & 0o777).toBe(0o600)
      const apiKey = (await readFile(keyFile, 'utf8')).trim()
      expect(out).not.toContain(apiKey)
      // The format the e2b SDK (2.39 to 2.45) checks before it sends anything.
      expect(apiKey).toMatch(/^e2b_[0-9a-f]+$/)

      const listed = await fetch(`${exports.E2B_API_URL}/v2/sandboxes`, { headers: { 'X-API-KEY': apiKey } })
      expect(listed.status).toBe(200)
      const refused = await fetch(`${exports.E2B_API_URL}/v2/sandboxes`, {
        headers: { 'X-API-KEY': 'wrong-key-123' },
      })
      expect(refused.status).toBe(401)
      // Create answers the domain too, so even an SDK that was given none names this host in getHost.
      const created = await fetch(`${exports.E2B_API_URL}/v2/sandboxes`, {
        method: 'POST',
        headers: { 'X-API-KEY': apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ templateID: 'base' }),
      })
      const sandbox = (await created.json()) as { sandboxID: string; domain: string }
      expect(sandbox.domain).toBe(exports.E2B_DOMAIN)
      await fetch(`${exports.E2B_API_URL}/sandboxes/${sandbox.sandboxID}`, {
        method: 'DELETE',
        headers: { 'X-API-KEY': apiKey },
      })
    } finally {
      expect(await host.stop()).toBe(0)
    }
    expect(host.stderr()).toContain('sandkeep host: stopping')
  }, 60_000)

  it('--verbose logs each lifecycle event and request on stderr, and never a key, token or header value', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandkeep-cli-host-verbose-'))
    const host = startCli(['host', '--state-dir', dir, '--verbose'], cleanEnv())
    let secrets: string[] = []
    let sandboxId = ''
    try {
      const out = await waitFor(() => (host.stdout().includes('Ctrl-C') ? host.stdout() : undefined))
      const apiUrl = /^export E2B_API_URL=(\S+)$/m.exec(out)?.[1] as string
      const apiKey = (await readFile(join(dir, 'api-key'), 'utf8')).trim()
      const headers = { 'X-API-KEY': apiKey, 'content-type': 'application/json' }
      const created = (await (
        await fetch(`${apiUrl}/v2/sandboxes`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ templateID: 'base', allow_internet_access: false }),
        })
      ).json()) as { sandboxID: string; envdAccessToken: string; trafficAccessToken: string }
      sandboxId = created.sandboxID
      secrets = [apiKey, created.envdAccessToken, created.trafficAccessToken, 'header-value-never-logged']
      const health = await fetch(`${apiUrl}/health?token=${created.envdAccessToken}`, {
        headers: {
          'E2b-Sandbox-Id': sandboxId,
          'E2b-Sandbox-Port': '49983',
          'X-Access-Token': created.envdAccessToken,
          'X-Custom': 'header-value-never-logged',
        },
      })
      expect(health.status).toBe(204)
      await fetch(`${apiUrl}/sandboxes/${sandboxId}/pause`, { method: 'POST', headers, body: '{}' })
      await fetch(`${apiUrl}/v2/sandboxes/${sandboxId}/connect`, { method: 'POST', headers, body: '{}' })
      await fetch(`${apiUrl}/sandboxes/${sandboxId}`, { method: 'DELETE', headers })
      await waitFor(() => (host.stderr().includes(`sandbox-kill ${sandboxId}`) ? true : undefined))
    } finally {
      expect(await host.stop()).toBe(0)
      await rm(dir, { recursive: true, force: true })
    }
    const log = host.stderr()
    for (const line of [
      new RegExp(`sandbox-create ${sandboxId} templateId=base createMs=\\d+`),
      /POST \/v2\/sandboxes 201 \d+ms/,
      new RegExp(`GET /health \\(port 49983 of ${sandboxId}\\) 204 \\d+ms`),
      new RegExp(`sandbox-pause ${sandboxId} mode=memory`),
      new RegExp(`sandbox-resume ${sandboxId}`),
      new RegExp(`sandbox-connect ${sandboxId} resumed=true`),
      new RegExp(`DELETE /sandboxes/${sandboxId} 204`),
      new RegExp(`sandbox-kill ${sandboxId} reason=api`),
    ])
      expect(log).toMatch(line)
    for (const secret of secrets) expect(log).not.toContain(secret)
  }, 60_000)

  it("getHost(port) URLs work from Node's fetch with the printed NODE_OPTIONS, and from curl as they are", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandkeep-cli-host-names-'))
    const host = startCli(['host', '--state-dir', dir], cleanEnv())
    try {
      const out = await waitFor(() => (host.stdout().includes('Ctrl-C') ? host.stdout() : undefined))
      const apiUrl = /^export E2B_API_URL=(\S+)$/m.exec(out)?.[1] as string
      const domain = /^export E2B_DOMAIN=(\S+)$/m.exec(out)?.[1] as string
      const nodeOptions =
        /^export NODE_OPTIONS="(--import=[^$"]+)\$\{NODE_OPTIONS:\+ \$NODE_OPTIONS\}"$/m.exec(out)?.[1]
      expect(nodeOptions).toBeTruthy()
      const apiKey = (await readFile(join(dir, 'api-key'), 'utf8')).trim()
      const created = (await (
        await fetch(`${apiUrl}/v2/sandboxes`, {
          method: 'POST',
          headers: { 'X-API-KEY': apiKey, 'content-type': 'application/json' },
          body: JSON.stringify({ templateID: 'base', allow_internet_access: false }),
        })
      ).json()) as { sandboxID: string }
      // What sandbox.getHost(49983) names: envd's /health answers 204 to anyone.
      const url = `http://49983-${created.sandboxID}.${domain}/health`
      const probe = `fetch(${JSON.stringify(url)}).then((r) => console.log(r.status), (e) => console.log(e.cause?.code ?? e.message))`
      const node = (env: NodeJS.ProcessEnv) =>
        spawnSync(process.execPath, ['-e', probe], {
          env: { ...cleanEnv(), ...env },
          encoding: 'utf8',
        }).stdout.trim()
      expect(node({ NODE_OPTIONS: '' })).toBe('ENOTFOUND')
      expect(node({ NODE_OPTIONS: nodeOptions })).toBe('204')
      const curl = spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', url], {
        encoding: 'utf8',
      })
      if (!curl.error) expect(curl.stdout).toBe('204')
      await fetch(`${apiUrl}/sandboxes/${created.sandboxID}`, {
        method: 'DELETE',
        headers: { 'X-API-KEY': apiKey },
      })
    } finally {
      expect(await host.stop()).toBe(0)
      await rm(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it('--tls-dir also speaks TLS on the port and prints the CA to trust', async () => {
    const tlsDir = join(stateDir, 'tls')
    const host = startCli(['host', '--tls-dir', tlsDir], cleanEnv())
    try {
      const out = await waitFor(() => (host.stdout().includes('Ctrl-C') ? host.stdout() : undefined))
      const caFile = join(tlsDir, 'ca.pem')
      expect(out).toContain(`export NODE_EXTRA_CA_CERTS=${caFile}\n`)
      const apiUrl = new URL(/^export E2B_API_URL=(.*)$/m.exec(out)?.[1] ?? '')
      const ca = await readFile(caFile)
      const status = await new Promise<number>((resolve, reject) => {
        const outgoing = request(
          { host: '127.0.0.1', servername: 'localhost', port: apiUrl.port, path: '/health', ca },
          (response) => {
            response.resume()
            resolve(response.statusCode ?? 0)
          },
        )
        outgoing.on('error', reject)
        outgoing.end()
      })
      expect(status).toBe(200)
    } finally {
      expect(await host.stop()).toBe(0)
    }
  }, 60_000)
})
