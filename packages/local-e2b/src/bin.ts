#!/usr/bin/env node
// sandkeep-local-e2b: runs the local E2B-compatible host in the foreground until SIGINT/SIGTERM.
import { chmod, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { shellQuote } from './errors.js'
import { type LocalE2BHost, startLocalE2B } from './host.js'
import type { LocalE2BOptions } from './options.js'

const HELP = `Usage: sandkeep-local-e2b [options]

Runs an E2B-compatible sandbox host on this machine (control plane, envd, code interpreter).

Options:
  --port <n>            TCP port (default 0: a free one)
  --hostname <addr>     interface to listen on (default 127.0.0.1; loopback only)
  --domain <domain>     domain of the sandboxes' port URLs, <port>-<sandboxId>.<domain>
                        (default localhost:<port>; printed as E2B_DOMAIN)
  --tls-dir <dir>       also speak TLS on the port, with a certificate authority kept in <dir>
                        (made there when missing; trust <dir>/ca.pem, printed as NODE_EXTRA_CA_CERTS)
  --state-dir <dir>     registry and sandbox files (default: a temp dir removed on exit)
  --pause-mode <mode>   memory | filesystem | processes (default memory)
  --retention-ms <n>    delete sandboxes paused longer than this
  --isolation <mode>    auto | bubblewrap | none (default auto)
  --api-key <key>       API key to require (default: random, in E2B's format e2b_<hex>)
  --help                show this help
`

/**
 * Writes to stderr, never throwing: the reader of the host's log may be gone (a closed pipe gives EPIPE), and
 * a log line must never be what stops the host from shutting its sandboxes down.
 */
function log(line: string): void {
  try {
    process.stderr.write(`${line}\n`)
  } catch {}
}

// A write to a pipe whose reader left fails asynchronously too, as an 'error' event: without a listener it
// would end the process (exit 1) in the middle of whatever it was doing, shutdown included.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {})
/** E2B's API key format, which the e2b SDK 2.39 to 2.45 checks before sending anything. */
const E2B_KEY_FORMAT = /^e2b_[0-9a-f]+$/

function fail(message: string): never {
  log(`sandkeep-local-e2b: ${message} (see --help)`)
  process.exit(2)
}

function integer(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  if (!/^\d+$/.test(value)) fail(`--${name} must be a whole number, got "${value}"`)
  return Number(value)
}

/** The options the flags ask for, or `help`; a bad flag ends the process with code 2. */
function parseFlags(): LocalE2BOptions | 'help' {
  let values: Record<string, string | boolean | undefined>
  try {
    values = parseArgs({
      options: {
        port: { type: 'string' },
        hostname: { type: 'string' },
        domain: { type: 'string' },
        'tls-dir': { type: 'string' },
        'state-dir': { type: 'string' },
        'pause-mode': { type: 'string' },
        'retention-ms': { type: 'string' },
        isolation: { type: 'string' },
        'api-key': { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }).values
  } catch (error) {
    fail((error as Error).message.split('\n')[0] ?? 'bad arguments')
  }
  if (values.help) return 'help'
  const options: LocalE2BOptions = {}
  const port = integer('port', values.port as string | undefined)
  if (port !== undefined) options.port = port
  if (typeof values.hostname === 'string') options.hostname = values.hostname
  if (typeof values.domain === 'string') options.domain = values.domain
  if (typeof values['tls-dir'] === 'string') options.tlsDir = values['tls-dir']
  if (typeof values['state-dir'] === 'string') options.stateDir = values['state-dir']
  const pauseMode = values['pause-mode']
  if (pauseMode !== undefined) {
    if (pauseMode !== 'memory' && pauseMode !== 'filesystem' && pauseMode !== 'processes') {
      fail(`--pause-mode must be memory, filesystem or processes, got "${String(pauseMode)}"`)
    }
    options.pauseMode = pauseMode
  }
  const retention = integer('retention-ms', values['retention-ms'] as string | undefined)
  if (retention !== undefined) options.retentionMs = retention
  const isolation = values.isolation
  if (isolation !== undefined) {
    if (isolation !== 'auto' && isolation !== 'bubblewrap' && isolation !== 'none') {
      fail(`--isolation must be auto, bubblewrap or none, got "${String(isolation)}"`)
    }
    options.isolation = isolation
  }
  if (typeof values['api-key'] === 'string') {
    options.apiKey = values['api-key']
    if (!E2B_KEY_FORMAT.test(options.apiKey)) {
      process.stderr.write(
        "sandkeep-local-e2b: --api-key is not in E2B's key format (e2b_ followed by hex digits); the e2b SDK 2.39 to 2.45 refuses such a key unless E2B_VALIDATE_API_KEY=false\n",
      )
    }
  }
  return options
}

/** Prints the export lines; the key itself goes to a 0600 file that the E2B_API_KEY line reads. */
async function printExports(host: LocalE2BHost): Promise<void> {
  log('Export these in the shell that runs your E2B client:')
  // The key never reaches the terminal (scrollback, CI logs): it goes to a 0600 file in the state dir and
  // the export line reads it from there.
  const keyFile = join(host.stateDir, 'api-key')
  await writeFile(keyFile, `${host.apiKey}\n`, { mode: 0o600 })
  await chmod(keyFile, 0o600)
  for (const [name, value] of Object.entries(host.env)) {
    const shown = name === 'E2B_API_KEY' ? `"$(cat ${shellQuote(keyFile)})"` : value
    try {
      process.stdout.write(`export ${name}=${shown}\n`)
    } catch {}
  }
  // Node clients trust the host's own CA for its https URLs through this variable.
  if (host.caFile) {
    try {
      process.stdout.write(`export NODE_EXTRA_CA_CERTS=${shellQuote(host.caFile)}\n`)
    } catch {}
  }
}

async function main(): Promise<void> {
  const options = parseFlags()
  if (options === 'help') {
    process.stdout.write(HELP)
    return
  }
  options.logger = log
  let host: LocalE2BHost
  try {
    host = await startLocalE2B(options)
  } catch (error) {
    fail((error as Error).message)
  }
  log(
    `sandkeep-local-e2b listening on ${host.apiUrl} (isolation: ${host.isolation}, freezer: ${host.freezer}, pause: ${host.pauseMode}, state: ${host.stateDir})`,
  )
  await printExports(host)
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    log(`sandkeep-local-e2b: ${signal}, stopping`)
    host.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`sandkeep-local-e2b: close failed: ${String(error)}`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
}

void main()
