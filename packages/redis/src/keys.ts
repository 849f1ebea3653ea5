// Every Redis key the store uses is built here, and only here.
//
//   <prefix>:{<tenant>:<hash>}:record       hash: the session record (core JSON + manifest and restore JSON)
//   <prefix>:{<tenant>:<hash>}:lease        hash: holders, fencing token counter, creation claim, journal bytes
//   <prefix>:{<tenant>:<hash>}:journal      list: journal entries
//   <prefix>:{<tenant>:<hash>}:checkpoints  hash: kept checkpoints, three fields per turn (includes/checkpoints.lua)
//   <prefix>:{<tenant>}:index               sorted set: the tenant's sessions by last activity
//   <prefix>:{<tenant>}:snapshots           hash: the tenant's snapshot ledger, snapshot id → bytes or '?'
//   <prefix>:clock                          never stored: names the Cluster node whose clock `now()` reads
//
// `<hash>` is a hash of the conversation id (the raw id lives only inside the record), so ids such as
// `a:b`, `{x}` or `*` cannot add separators, change the Cluster hash tag or act as glob patterns. The hash
// tag `{<tenant>:<hash>}` puts one session's keys in one slot (one script may touch them all) and spreads
// sessions over a Cluster; the tenant index has its own slot and is only ever touched on its own.
import { conversationHash, invalidArgument, type SessionKey } from '@sandkeep/core/store'

/** Prefixes: short, and free of the hash-tag braces and whitespace. */
export const PREFIX_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/

/** The keys of one session. */
export interface SessionKeys {
  /** The record hash. */
  record: string
  /** The lease hash. */
  lease: string
  /** The journal list. */
  journal: string
  /** The checkpoints hash. */
  checkpoints: string
  /** The tenant's listing index. */
  index: string
  /** The session's member in the index: the conversation hash. */
  member: string
}

/**
 * Checks a key prefix.
 * @throws SandkeepError INVALID_ARGUMENT
 */
export function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw invalidArgument(
      'prefix',
      `must be 1 to 64 characters from A-Z, a-z, 0-9, '.', '_', ':' and '-' (no braces), got ${JSON.stringify(String(prefix).slice(0, 40))}.`,
    )
  }
  return prefix
}

/**
 * The keys of sessions under `prefix`, remembering the recent ones: a turn's begin and end hash the same
 * conversation id.
 */
export function sessionKeyCache(prefix: string): (key: SessionKey) => SessionKeys {
  const recent = new Map<string, SessionKeys>()
  return (key) => {
    const id = `${key.tenant}\u0000${key.conversationId}`
    let keys = recent.get(id)
    if (!keys) {
      if (recent.size >= 10_000) recent.clear()
      keys = sessionKeys(prefix, key)
      recent.set(id, keys)
    }
    return keys
  }
}

/** The keys of the session `key` under `prefix` (both already validated). */
export function sessionKeys(prefix: string, key: SessionKey): SessionKeys {
  return sessionKeysByMember(prefix, key.tenant, conversationHash(key.conversationId))
}

/** The keys of a session known by its index member (listing knows only the hash). */
export function sessionKeysByMember(prefix: string, tenant: string, member: string): SessionKeys {
  const base = `${prefix}:{${tenant}:${member}}`
  return {
    record: `${base}:record`,
    lease: `${base}:lease`,
    journal: `${base}:journal`,
    checkpoints: `${base}:checkpoints`,
    index: tenantIndexKey(prefix, tenant),
    member,
  }
}

/** The snapshot ledger of a tenant (in the tenant's slot, like its index; never matched by `:index` scans). */
export function tenantLedgerKey(prefix: string, tenant: string): string {
  return `${prefix}:{${tenant}}:snapshots`
}

/** The listing index of a tenant. */
export function tenantIndexKey(prefix: string, tenant: string): string {
  return `${prefix}:{${tenant}}:index`
}

/** The key the store clock is read through (never stored: it routes the reading to one Cluster node). */
export function clockKey(prefix: string): string {
  return `${prefix}:clock`
}
