// Starts the built local-e2b host (dist/bin.js) in a child process, as a platform would be: its CPU work
// does not share the event loop of the client being measured. Used by this package's bench and the root
// overhead bench.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'

/**
 * @param {{ pauseMode?: string }} [options]
 * @returns {Promise<{ opts: { apiKey: string, apiUrl: string, sandboxUrl: string }, isolation: string,
 *   freezer: string, mode: string, pid: number, admin: (path: string) => Promise<unknown>,
 *   close: () => Promise<void> }>}
 */
export async function startHostProcess(options = {}) {
  const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
  // The bin never prints the key (its export line reads a 0600 file): give it one we know.
  const apiKey = `e2b_bench_${randomBytes(16).toString('hex')}`
  const args = [bin, '--port', '0', '--api-key', apiKey]
  if (options.pauseMode) args.push('--pause-mode', options.pauseMode)
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  const env = {}
  let banner = ''
  await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`host exited with ${code}: ${banner.slice(-500)}`)))
    child.stderr.on('data', (chunk) => {
      banner += chunk.toString()
    })
    child.stdout.on('data', (chunk) => {
      for (const line of chunk.toString().split('\n')) {
        const match = /^export (E2B_[A-Z_]+)=(.*)$/.exec(line)
        if (match) env[match[1]] = match[1] === 'E2B_API_KEY' ? apiKey : match[2]
      }
      if (env.E2B_API_KEY && env.E2B_API_URL && env.E2B_SANDBOX_URL) resolve()
    })
  })
  const headers = { 'x-api-key': env.E2B_API_KEY }
  return {
    opts: { apiKey: env.E2B_API_KEY, apiUrl: env.E2B_API_URL, sandboxUrl: env.E2B_SANDBOX_URL },
    isolation: /isolation: (\w+)/.exec(banner)?.[1] ?? 'unknown',
    freezer: /freezer: ([\w-]+)/.exec(banner)?.[1] ?? 'unknown',
    mode: 'child process (bin)',
    pid: child.pid,
    admin: async (path) => {
      const response = await fetch(`${env.E2B_API_URL}/_local/${path}`, { headers })
      return response.ok ? response.json() : undefined
    },
    close: () =>
      new Promise((resolve) => {
        child.removeAllListeners('exit')
        child.once('exit', resolve)
        child.kill('SIGTERM')
      }),
  }
}
