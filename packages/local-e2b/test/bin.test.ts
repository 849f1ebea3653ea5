// The built bin, as a user runs it: export lines on stdout, the API key kept off the terminal, clean stop.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

describe('sandkeep-local-e2b (built bin)', () => {
  it('prints export lines whose key comes from a 0600 file, never the key itself, and stops on SIGTERM', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'sk-bin-'))
    dirs.push(stateDir)
    const apiKey = `e2b_bin_test_${process.pid}_${Date.now()}`
    const child = spawn(process.execPath, [bin, '--port', '0', '--state-dir', stateDir, '--api-key', apiKey])
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
