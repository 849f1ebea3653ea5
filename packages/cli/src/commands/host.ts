import { randomBytes } from 'node:crypto'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { shellQuote } from '@sandkeep/core/provider'
import { durationOption, flagOption, integerOption, type ParsedArgs, stringOption } from '../args.js'
import { type Command, type CommandContext, ExitCode } from '../command.js'
import type { Isolation, PauseMode } from '../demo/events.js'
import { ConfigError } from '../errors.js'
import { isolationOption, loopbackHostname, pauseModeOption, startLocalHost } from '../local-host-options.js'

/** E2B's API key format, which the e2b SDK 2.39 to 2.45 checks before sending anything. */
const E2B_KEY_FORMAT = /^e2b_[0-9a-f]+$/

/** `sandkeep host`: runs local-e2b in the foreground and prints the E2B_* lines to export. */
export const hostCommand: Command = {
  spec: {
    name: 'host',
    summary: 'Run the local E2B-compatible host in the foreground and print the E2B_* lines to export.',
    description: `Runs @sandkeep/local-e2b in the foreground: an E2B-compatible sandbox host on this machine, driven by the
unmodified e2b and @e2b/code-interpreter SDKs. It prints the E2B_* variables to export in another shell; the
API key is written to <state-dir>/api-key (mode 0600) and read from there, so it never lands in a terminal
log. Stop it with Ctrl-C; a host restarted on the same --state-dir finds its sandboxes again (files kept,
processes gone).`,
    options: {
      port: {
        type: 'string',
        valueName: '<port>',
        description: 'Port to listen on; 0 picks a free one.',
        defaultText: '0',
      },
      hostname: {
        type: 'string',
        valueName: '<address>',
        description: 'Loopback address to bind (127.0.0.1, ::1 or localhost).',
        defaultText: '127.0.0.1',
      },
      domain: {
        type: 'string',
        valueName: '<domain>',
        description:
          "Domain of the sandboxes' port URLs, <port>-<sandboxId>.<domain> (sandbox.getHost); printed as E2B_DOMAIN.",
        defaultText: 'localhost:<port>',
      },
      'tls-dir': {
        type: 'string',
        valueName: '<dir>',
        description:
          "Also speak TLS on the port (E2B's https URLs), with a certificate authority kept in <dir>; trust <dir>/ca.pem.",
        defaultText: 'plain HTTP only',
      },
      'state-dir': {
        type: 'string',
        valueName: '<dir>',
        description: 'Where sandboxes live; reuse it to find them again after a restart.',
        defaultText: 'a new temporary directory',
      },
      'pause-mode': pauseModeOption(
        'What a pause keeps: memory (E2B), filesystem (cold boot), processes (Kubernetes scale-to-0).',
      ),
      isolation: isolationOption('the host'),
      retention: {
        type: 'string',
        valueName: '<duration>',
        description: 'Paused sandboxes older than this are gone (404 on connect), e.g. 30m.',
        defaultText: 'unlimited',
      },
      json: {
        type: 'boolean',
        description: 'Print one JSON line with the URLs and the api-key file instead of export lines.',
      },
      verbose: {
        type: 'boolean',
        description:
          'Log each sandbox lifecycle event and every request (method, path, status, ms) on stderr; never a key or token.',
      },
    },
    examples: [
      'sandkeep host --port 3100 --state-dir .sandkeep/host',
      '# in another shell, paste the printed lines, then run any E2B program against it',
    ],
  },
  async run(args, context) {
    const port = integerOption(args, 'host', 'port', { min: 0, max: 65_535 }) ?? 0
    const hostname = loopbackHostname(args, 'host')
    const domain = stringOption(args, 'domain')
    const tlsDirOption = stringOption(args, 'tls-dir')
    const tlsDir = tlsDirOption ? resolve(tlsDirOption) : undefined
    const pauseMode = (stringOption(args, 'pause-mode') ?? 'memory') as PauseMode
    const retentionMs = durationOption(args, 'host', 'retention', { min: 1000, max: 365 * 86_400_000 })
    const stateDirOption = stringOption(args, 'state-dir')
    const isolation = stringOption(args, 'isolation') as Isolation | undefined
    const verbose = flagOption(args, 'verbose')
    const stateDir = stateDirOption
      ? resolve(stateDirOption)
      : await mkdtemp(join(tmpdir(), 'sandkeep-host-'))
    await mkdir(stateDir, { recursive: true })
    // A temporary state directory holds the API key file and the sandboxes of this run only: it goes when
    // the host stops (Ctrl-C, SIGTERM) or fails to start. A --state-dir is the user's and is kept.
    try {
      return await serve(args, context, {
        port,
        hostname,
        domain,
        tlsDir,
        pauseMode,
        retentionMs,
        stateDir,
        isolation,
        verbose,
      })
    } finally {
      if (!stateDirOption) await rm(stateDir, { recursive: true, force: true })
    }
  },
}

async function serve(
  args: ParsedArgs,
  context: CommandContext,
  settings: {
    port: number
    hostname: string
    domain: string | undefined
    tlsDir: string | undefined
    pauseMode: PauseMode
    retentionMs: number | undefined
    stateDir: string
    isolation: Isolation | undefined
    verbose: boolean
  },
): Promise<number> {
  const { port, hostname, domain, tlsDir, pauseMode, retentionMs, stateDir, isolation, verbose } = settings

  // The key only protects a loopback host, but it is still a credential: keep it out of stdout (logs,
  // scrollback) and give it to clients through a file only this user can read. E2B's format (`e2b_` and
  // hex): the SDK (2.39 to 2.45) refuses any other key before it sends a request.
  const apiKey = context.env.SANDKEEP_HOST_API_KEY || `e2b_${randomBytes(20).toString('hex')}`
  if (!E2B_KEY_FORMAT.test(apiKey)) {
    context.stderr.write(
      "sandkeep host: SANDKEEP_HOST_API_KEY is not in E2B's key format (e2b_ followed by hex digits); the e2b SDK 2.39 to 2.45 refuses such a key unless E2B_VALIDATE_API_KEY=false\n",
    )
  }
  const keyFile = join(stateDir, 'api-key')
  await writeFile(keyFile, `${apiKey}\n`, { mode: 0o600 })
  await chmod(keyFile, 0o600)

  let host: Awaited<ReturnType<typeof startLocalHost>>
  try {
    host = await startLocalHost({
      port,
      hostname,
      stateDir,
      apiKey,
      pauseMode,
      // The host's lines on stderr (stdout holds the export lines); with --verbose every lifecycle event
      // and request too.
      logger: (line) => context.stderr.write(`${line}\n`),
      logLevel: verbose ? 'debug' : 'warn',
      ...(domain === undefined ? {} : { domain }),
      ...(tlsDir === undefined ? {} : { tlsDir }),
      ...(retentionMs === undefined ? {} : { retentionMs }),
      ...(isolation ? { isolation } : {}),
    })
  } catch (error) {
    if ((error as { code?: unknown })?.code === 'EADDRINUSE') {
      throw new ConfigError(
        `port ${port} on ${hostname} is already in use; choose another with --port <port> (--port 0 picks a free one)`,
      )
    }
    throw error
  }
  // Node's resolver (glibc) knows no *.localhost, so getHost(port) URLs fail in fetch; a preload fixes that
  // for the Node processes of the shell that exports it. curl and browsers resolve them already.
  const { localhostResolverPath } = await import('@sandkeep/local-e2b')
  const resolver = /(^|\.)localhost(:\d+)?$/.test(host.domain) ? localhostResolverPath() : undefined
  const nodeOptions = resolver && /^[^\s"'$`\\]+$/.test(resolver) ? `--import=${resolver}` : undefined
  if (flagOption(args, 'json')) {
    context.stdout.write(
      `${JSON.stringify({ type: 'host-ready', apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl, domain: host.domain, caFile: host.caFile, apiKeyFile: keyFile, stateDir, pauseMode, isolation: host.isolation, snapshotsKeepMemory: false, ...(nodeOptions ? { nodeOptions } : {}) })}\n`,
    )
  } else {
    // E2B_DOMAIN too: an SDK that falls back to its defaults (no E2B_API_URL in one shell, a getHost URL)
    // then names this host, never the public E2B domain.
    context.stdout.write(
      `local-e2b listening on ${host.apiUrl} (pause mode ${pauseMode}, isolation ${host.isolation}, state in ${stateDir})\n` +
        'Export these in the shell that runs your E2B program:\n\n' +
        `export E2B_API_URL=${host.apiUrl}\n` +
        `export E2B_SANDBOX_URL=${host.sandboxUrl}\n` +
        `export E2B_DOMAIN=${shellWord(host.domain)}\n` +
        `export E2B_API_KEY="$(cat ${shellWord(keyFile)})"\n` +
        // sandkeep's E2B provider then knows this host's snapshots keep files, not memory.
        'export SANDKEEP_SNAPSHOTS_KEEP_MEMORY=0\n' +
        (host.caFile ? `export NODE_EXTRA_CA_CERTS=${shellWord(host.caFile)}\n` : '') +
        // Appends to what the shell has, so that other preloads stay.
        (nodeOptions ? `export NODE_OPTIONS="${nodeOptions}\${NODE_OPTIONS:+ $NODE_OPTIONS}"\n` : '') +
        '\n' +
        `Sandbox ports: http${host.caFile ? '(s)' : ''}://<port>-<sandboxId>.${host.domain} (sandbox.getHost(port))` +
        (nodeOptions ? '; NODE_OPTIONS lets Node resolve them, curl and browsers do already.\n' : '.\n') +
        'Ctrl-C stops the host.\n',
    )
  }
  await new Promise<void>((resolveWait) => {
    if (context.signal.aborted) resolveWait()
    context.signal.addEventListener('abort', () => resolveWait(), { once: true })
  })
  context.stderr.write('sandkeep host: stopping\n')
  await host.close()
  return ExitCode.OK
}

/** A plain word stays as it is so the printed hint reads well; anything else is quoted for the shell. */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_./:-]+$/.test(text) ? text : shellQuote(text)
}
