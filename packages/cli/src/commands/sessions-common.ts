// What the `sessions` subcommands share: their common flags and help, opening the store and the manager,
// reading the session key, and the wording of times and of a missing session.
import type { SandboxProvider, SessionKey, SessionManager, SessionStore } from '@sandkeep/core'
import {
  type CommandSpec,
  integerOption,
  type OptionSpec,
  type ParsedArgs,
  stringOption,
  UsageError,
  usageErrorFrom,
} from '../args.js'
import type { CommandContext } from '../command.js'
import { e2bFromEnv, openE2BProvider, openStore, redactUrl, storeConfig } from '../config.js'

const commonOptions: Record<string, OptionSpec> = {
  tenant: {
    type: 'string',
    valueName: '<tenant>',
    description: 'Tenant whose sessions to use.',
    defaultText: 'default',
  },
  json: { type: 'boolean', description: 'Print JSON instead of a table.' },
  redis: { type: 'string', valueName: '<url>', description: 'Redis URL.', defaultText: '$REDIS_URL' },
  prefix: {
    type: 'string',
    valueName: '<prefix>',
    description: 'Key prefix of the Redis store.',
    defaultText: '$SANDKEEP_REDIS_PREFIX or sandkeep',
  },
}

/** The environment section of every `sessions` help. */
export const environment = {
  title: 'Environment',
  text: `REDIS_URL              the session store (sessions live in Redis; the memory store holds nothing between runs)
SANDKEEP_REDIS_PREFIX  key prefix (default sandkeep)
E2B_API_KEY            the sandbox platform, for end, gc, rewind and fork (with E2B_API_URL / E2B_SANDBOX_URL for a local host)`,
}

/** The spec of `sessions <name>`: the common options and help sections plus the subcommand's own. */
export function spec(name: string, summary: string, extra: Partial<CommandSpec> = {}): CommandSpec {
  return {
    name: `sessions ${name}`,
    summary,
    options: { ...commonOptions, ...(extra.options ?? {}) },
    sections: [environment],
    ...omit(extra, 'options'),
  }
}

function omit<T extends object, K extends keyof T>(value: T, key: K): Omit<T, K> {
  const { [key]: _, ...rest } = value
  return rest
}

/** The Redis store of `--redis`/`REDIS_URL`; a missing or malformed URL is a usage error. */
export async function openSessionStore(
  args: ParsedArgs,
  context: CommandContext,
  command: string,
): Promise<SessionStore> {
  const config = storeConfig(context.env, {
    redis: stringOption(args, 'redis'),
    prefix: stringOption(args, 'prefix'),
  })
  if (config.kind === 'memory') {
    throw new UsageError(
      command,
      'no session store: set REDIS_URL (or pass --redis); the in-memory store of a demo run is gone when it exits',
    )
  }
  try {
    new URL(config.url)
  } catch {
    throw new UsageError(command, `the Redis URL ${JSON.stringify(redactUrl(config.url))} is not a URL`)
  }
  return openStore(config)
}

/**
 * A session manager on the platform of `E2B_API_KEY` (needed by end and gc). `watch` may wrap the provider to
 * see what the platform answered (end tells which of its calls found nothing).
 */
export async function openManager(
  store: SessionStore,
  context: CommandContext,
  command: string,
  watch?: (provider: SandboxProvider) => SandboxProvider,
): Promise<SessionManager> {
  const connection = e2bFromEnv(context.env)
  if (!connection) {
    throw new UsageError(
      command,
      'no sandbox platform: set E2B_API_KEY (and E2B_API_URL / E2B_SANDBOX_URL for a local host; see sandkeep host)',
    )
  }
  const { createSessionManager } = await import('@sandkeep/core')
  const provider = await openE2BProvider(connection)
  return createSessionManager({ store, provider: watch ? watch(provider) : provider })
}

/** The session key from the positional id and `--tenant`; a bad one is a usage error, found before any I/O. */
export async function sessionKeyOf(args: ParsedArgs, command: string): Promise<SessionKey> {
  const { validateSessionKey } = await import('@sandkeep/core')
  return usageErrorFrom(command, () => validateSessionKey(args.positionals[0], stringOption(args, 'tenant')))
}

/** The highest turn number `rewind` and `fork` accept (the core's bound). */
const MAX_TURN = 1_000_000_000

/** A turn-number option (`--to-turn`, `--at-turn`): a whole number from 0; `undefined` when not given. */
export function turnOption(args: ParsedArgs, command: string, name: string): number | undefined {
  return integerOption(args, command, name, { min: 0, max: MAX_TURN })
}

/** `--tenant`, validated; a bad one is a usage error. */
export async function tenantFrom(args: ParsedArgs, command: string): Promise<string> {
  const { validateTenant } = await import('@sandkeep/core')
  return usageErrorFrom(command, () => validateTenant(stringOption(args, 'tenant')))
}

/** Runs `fn`, then closes the store whatever happened. */
export async function withStore<T>(store: SessionStore, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } finally {
    await store.close().catch(() => {})
  }
}

/** How long ago `epochMs` was, for people (`45s ago`, `3h ago`); `—` for never. */
export function ago(epochMs: number | null): string {
  if (epochMs === null) return '—'
  const seconds = Math.max(0, (Date.now() - epochMs) / 1000)
  if (seconds < 90) return `${Math.round(seconds)}s ago`
  if (seconds < 5400) return `${Math.round(seconds / 60)}m ago`
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h ago`
  return `${Math.round(seconds / 86_400)}d ago`
}

/** The line printed when the conversation has no session. */
export function noSession(command: string, key: SessionKey): string {
  return `sandkeep ${command}: no session ${JSON.stringify(key.conversationId)} for tenant ${key.tenant}\n`
}
