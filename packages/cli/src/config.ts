import type { SandboxProvider, SessionStore } from '@sandkeep/core'
import { ConfigError } from './errors.js'

/** Default key prefix of the Redis store when neither `--prefix` nor `SANDKEEP_REDIS_PREFIX` is given. */
const DEFAULT_REDIS_PREFIX = 'sandkeep'

/** Where sessions are kept, from flags and environment. */
export type StoreConfig = { kind: 'memory' } | { kind: 'redis'; url: string; prefix: string }

/** Reads the store configuration: Redis when `REDIS_URL` (or `--redis`) is set, else memory. */
export function storeConfig(env: NodeJS.ProcessEnv, flags: { redis?: string; prefix?: string }): StoreConfig {
  const url = flags.redis ?? (env.REDIS_URL || undefined)
  if (!url) return { kind: 'memory' }
  return { kind: 'redis', url, prefix: flags.prefix ?? (env.SANDKEEP_REDIS_PREFIX || DEFAULT_REDIS_PREFIX) }
}

/** A Redis URL as it may be shown: the password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    if (parsed.username && parsed.password === '') parsed.username = '***'
    return parsed.toString().replace(/\/$/, '')
  } catch {
    return '<unparsable URL>'
  }
}

/** Opens the configured store (no I/O until first use). */
export async function openStore(config: StoreConfig): Promise<SessionStore> {
  if (config.kind === 'memory') {
    const { createMemorySessionStore } = await import('@sandkeep/core')
    return createMemorySessionStore()
  }
  const { createRedisSessionStore } = await import('@sandkeep/redis')
  // ioredis ends a socket that never connected with a 2 s timer (disconnectTimeout); a CLI that found Redis
  // unreachable should not sit out that timer before exiting.
  return createRedisSessionStore({
    redis: config.url,
    prefix: config.prefix,
    redisOptions: { disconnectTimeout: 100 },
  })
}

/** Connection settings of an E2B(-compatible) platform. */
export interface E2BConnection {
  /** API key (never printed). */
  apiKey: string
  /** Control-plane URL, when not E2B cloud's default. */
  apiUrl?: string
  /** envd URL override (needed for local hosts). */
  sandboxUrl?: string
  /** E2B domain. */
  domain?: string
  /** What the platform's snapshots keep, when not E2B cloud's memory and files (a local-e2b host: files only). */
  snapshots?: { keepsMemory: boolean }
}

/**
 * E2B settings from `E2B_API_KEY`, `E2B_API_URL`, `E2B_SANDBOX_URL`, `E2B_DOMAIN`, and
 * `SANDKEEP_SNAPSHOTS_KEEP_MEMORY` (`0` for a platform whose snapshots keep files only, as `sandkeep host`
 * prints; unset: E2B cloud's, memory and files); `null` without a key.
 * @throws ConfigError when SANDKEEP_SNAPSHOTS_KEEP_MEMORY is neither 0 nor 1
 */
export function e2bFromEnv(env: NodeJS.ProcessEnv): E2BConnection | null {
  const apiKey = env.E2B_API_KEY
  if (!apiKey) return null
  const keepsMemory = env.SANDKEEP_SNAPSHOTS_KEEP_MEMORY
  if (keepsMemory !== undefined && keepsMemory !== '' && keepsMemory !== '0' && keepsMemory !== '1') {
    throw new ConfigError(
      `SANDKEEP_SNAPSHOTS_KEEP_MEMORY must be 0 (snapshots keep files only, as on a sandkeep host) or 1, got ${JSON.stringify(keepsMemory.slice(0, 20))}`,
    )
  }
  return {
    apiKey,
    ...(env.E2B_API_URL ? { apiUrl: env.E2B_API_URL } : {}),
    ...(env.E2B_SANDBOX_URL ? { sandboxUrl: env.E2B_SANDBOX_URL } : {}),
    ...(env.E2B_DOMAIN ? { domain: env.E2B_DOMAIN } : {}),
    ...(keepsMemory === '0' || keepsMemory === '1'
      ? { snapshots: { keepsMemory: keepsMemory === '1' } }
      : {}),
  }
}

/** Where an E2B connection points, for display. */
export function describeE2B(connection: E2BConnection): string {
  return connection.apiUrl ?? `https://api.${connection.domain ?? 'e2b.app'}`
}

/** Makes the E2B provider (no I/O until first use). */
export async function openE2BProvider(connection: E2BConnection): Promise<SandboxProvider> {
  const { createE2BProvider } = await import('@sandkeep/e2b')
  return createE2BProvider({ ...connection })
}
