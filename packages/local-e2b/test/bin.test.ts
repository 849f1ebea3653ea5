// The built bin, as a user runs it: export lines on stdout, the API key kept off the terminal, clean stop.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ConnectionConfig } from 'e2b'
import { afterAll, describe, expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const dirs: string[] = []
const children: ChildProcess[] = []
afterAll(async () => {
  // A test that failed half-way must not leave its host running.
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

describe('sandkeep-local-e2b (built bin)', () => {
  it('prints export lines whose key comes from a 0600 file, never the key itself, and stops on SIGTERM', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'sk-bin-'))
    dirs.push(stateDir)
    const apiKey = `e2b_${'0123456789abcdef'.repeat(2)}${process.pid.toString(16)}`
    const child = spawn(process.execPath, [bin, '--port', '0', '--state-dir', stateDir, '--api-key', apiKey])
    children.push(child)
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`bin exited early with ${code}: ${stderr}`)))
      child.stdout.on('data', (chunk) => {
        stdout += chunk
        if (stdout.includes('E2B_DOMAIN')) resolve()
      })
    })
    expect(stdout + stderr).not.toContain(apiKey)
    expect(stderr).not.toContain("not in E2B's key format")
    expect(stdout).toContain(`export E2B_API_KEY="$(cat '${join(stateDir, 'api-key')}')"`)
    expect((await stat(join(stateDir, 'api-key'))).mode & 0o777).toBe(0o600)
    // The export lines work as printed: evaluated by a shell, they give a client the right key and URL.
    const shell = spawnSync('bash', ['-c', `${stdout}\nprintf '%s\\n%s' "$E2B_API_KEY" "$E2B_API_URL"`], {
      encoding: 'utf8',
    })
    const [key, apiUrl] = shell.stdout.split('\n')
    expect(key).toBe(apiKey)
    expect((await fetch(`${apiUrl}/v2/sandboxes`, { headers: { 'x-api-key': key! } })).status).toBe(200)
    expect((await fetch(`${apiUrl}/v2/sandboxes`, { headers: { 'x-api-key': 'wrong' } })).status).toBe(401)
    // The SDK's own URL logic, given only what was printed (or only the domain of it), stays on this host.
    const printed = Object.fromEntries(
      [...stdout.matchAll(/^export (E2B_[A-Z_]+)=(.*)$/gm)].map((m) => [m[1], m[2]]),
    )
    const domain = printed.E2B_DOMAIN as string
    expect(domain).toBe(`localhost:${new URL(apiUrl as string).port}`)
    for (const options of [{ apiUrl, sandboxUrl: printed.E2B_SANDBOX_URL, domain }, { domain }]) {
      const config = new ConnectionConfig({ apiKey: key, ...options })
      const urls = [
        config.apiUrl,
        config.getSandboxUrl('isandbox', { sandboxDomain: domain, envdPort: 49983 }),
        `http://${config.getHost('isandbox', 8000, domain)}`,
      ]
      for (const url of urls)
        expect(new URL(url).hostname).toMatch(/^(127\.0\.0\.1|localhost|.+\.localhost)$/)
    }
    child.removeAllListeners('exit')
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
  }, 60_000)

  it('refuses an unknown flag with one line and exit code 2', () => {
    const result = spawnSync(process.execPath, [bin, '--bogus'], { encoding: 'utf8' })
    expect(result.status).toBe(2)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
  })
})
