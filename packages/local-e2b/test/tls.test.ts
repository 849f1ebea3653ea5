// With `tlsDir`, the SDK works from E2B's default https URLs: given only its API key and E2B_DOMAIN, it
// reaches the API at https://api.<domain>, envd at https://49983-<id>.<domain>, and a server the sandbox
// runs at https://<getHost(port)>, trusting the host's CA through NODE_EXTRA_CA_CERTS, as E2B's own tests
// fetch them. Plain HTTP keeps working on the same port.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Sandbox } from 'e2b'
import { afterAll, describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'
import { ECHO_SERVER, fetchVia, openWebSocket, startServer, WEBSOCKET_SERVER } from './ports.js'

const tlsDir = mkdtempSync(join(tmpdir(), 'sk-tls-'))
afterAll(() => rmSync(tlsDir, { recursive: true, force: true }))

/** What the client (a separate Node, as a user's program) does, through the unmodified SDK only. */
const CLIENT = `
import { Sandbox } from 'e2b'
const [apiKey, domain, server] = process.argv.slice(-3)
const sandbox = await Sandbox.create({ apiKey, domain })
const out = { sandboxId: sandbox.sandboxId, host: sandbox.getHost(8000) }
await sandbox.files.write('hello.txt', 'over https')
out.read = await sandbox.files.read('hello.txt')
await sandbox.files.write('/home/user/server.py', server)
await sandbox.commands.run('python3 server.py 8000 >/dev/null 2>&1', { background: true, timeoutMs: 0 })
await sandbox.commands.run('for i in $(seq 1 100); do (echo > /dev/tcp/127.0.0.1/8000) 2>/dev/null && exit 0; sleep 0.1; done; exit 1')
const answer = await fetch('https://' + sandbox.getHost(8000) + '/via-tls')
out.status = answer.status
out.path = (await answer.json()).path
const closed = await fetch('https://' + sandbox.getHost(3000))
out.closed = [closed.status, (await closed.json()).message]
await sandbox.kill()
console.log(JSON.stringify(out))
`

function runClient(env: NodeJS.ProcessEnv, args: string[]): Promise<string> {
  const preload = fileURLToPath(new URL('./fixtures/resolve-localhost.cjs', import.meta.url))
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--require', preload, '--input-type=module', '-e', CLIENT, ...args],
      { cwd: fileURLToPath(new URL('..', import.meta.url)), env, timeout: 90_000 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
    )
  })
}

describe('tlsDir: https on the same port', () => {
  const t = useTestHost({ tlsDir })

  // First in the file: when it ran after the child-process test, the SDK's lazy `import('undici8')` in this
  // worker was seen to give a module without `Agent` (2 of 3 runs); in this order it never did.
  it('WebSocket over TLS (wss) and plain HTTP reach the same sandbox server on the one port', async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      const ca = readFileSync(t.host.caFile as string)
      await startServer(sandbox, WEBSOCKET_SERVER, 8765)
      const secure = await openWebSocket(`https://${sandbox.getHost(8765)}/`, {}, ca)
      expect(await secure.next()).toBe('hello from the sandbox')
      secure.send('over tls')
      expect(await secure.next()).toBe('echo: over tls')
      secure.close()
      const plain = await openWebSocket(`http://${sandbox.getHost(8765)}/`)
      expect(await plain.next()).toBe('hello from the sandbox')
      plain.close()
      // A name that is not the host's gets the loopback certificate, which the client then refuses.
      await expect(fetchVia(`https://elsewhere.example:${t.host.port}/`, { ca })).rejects.toThrow(
        /altname|match/i,
      )
    } finally {
      await sandbox.kill()
    }
  }, 60_000)

  it("an SDK given only its key and E2B_DOMAIN works over E2B's https URLs, sandbox ports included", async () => {
    expect(t.host.caFile).toBe(join(tlsDir, 'ca.pem'))
    expect(statSync(join(tlsDir, 'ca.key')).mode & 0o777).toBe(0o600)
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME }
    env.NODE_EXTRA_CA_CERTS = t.host.caFile
    const out = JSON.parse(await runClient(env, [t.host.apiKey, t.host.domain, ECHO_SERVER]))
    expect(out.host).toBe(`8000-${out.sandboxId}.${t.host.domain}`)
    expect(out.read).toBe('over https')
    expect(out.status).toBe(200)
    expect(out.path).toBe('/via-tls')
    expect(out.closed).toEqual([502, 'The sandbox is running but port is not open'])
    // The same port still answers plain HTTP.
    expect((await fetch(`${t.host.apiUrl}/health`)).status).toBe(200)
    // Without trusting the CA, the client refuses the certificate: it is the host's own, not a public one.
    const refused = runClient({ PATH: process.env.PATH, HOME: process.env.HOME }, [
      t.host.apiKey,
      t.host.domain,
      ECHO_SERVER,
    ])
    await expect(refused).rejects.toThrow(/certificate|UNABLE_TO_VERIFY|self-signed/i)
  }, 120_000)
})
