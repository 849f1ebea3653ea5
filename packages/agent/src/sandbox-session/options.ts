import { posix } from 'node:path'
import { type SessionManager, validateConversationId, validateTenant } from '@sandkeep/core'
import { invalid } from '../errors.js'
import { hasNul } from './paths.js'
import type { SandboxSessionOptions } from './types.js'

/** The directory E2B templates start commands in; relative paths resolve against it. */
export const DEFAULT_WORKING_DIRECTORY = '/home/user'

/** {@link SandboxSessionOptions} checked, with their defaults filled in. */
export interface SessionSettings {
  sessions: SessionManager
  conversationId: string
  tenant: string
  workingDirectory: string
  commandTimeoutMs: number
  endGraceMs: number
  description: string
  abortSignal: AbortSignal | undefined
  /** {@link SandboxSessionOptions.beforeBegin}. */
  beforeBegin?: () => Promise<void>
}

/**
 * Checks the options of `createSandboxSession` before any I/O and fills in the defaults.
 * @throws SandkeepError INVALID_ARGUMENT for a bad conversation id, tenant or option.
 */
export function resolveSessionOptions(options: SandboxSessionOptions): SessionSettings {
  if (typeof options !== 'object' || options === null) {
    throw invalid('createSandboxSession needs an options object: { sessions, conversationId, tenant? }.')
  }
  const { sessions } = options
  if (typeof sessions !== 'object' || sessions === null || typeof sessions.beginTurn !== 'function') {
    throw invalid('createSandboxSession: `sessions` must be a SessionManager (from createSessionManager).')
  }
  const conversationId = validateConversationId(options.conversationId)
  const tenant = validateTenant(options.tenant)
  const workingDirectory = options.workingDirectory ?? DEFAULT_WORKING_DIRECTORY
  if (
    typeof workingDirectory !== 'string' ||
    !posix.isAbsolute(workingDirectory) ||
    hasNul(workingDirectory)
  ) {
    throw invalid('createSandboxSession: `workingDirectory` must be an absolute path such as /home/user.')
  }
  const commandTimeoutMs = checkMs(options.commandTimeoutMs, 'commandTimeoutMs', 300_000)
  const endGraceMs = checkMs(options.endGraceMs, 'endGraceMs', 10_000)
  if (options.description !== undefined && typeof options.description !== 'string') {
    throw invalid('createSandboxSession: `description` must be a string.')
  }
  const description = options.description ?? defaultDescription(workingDirectory)
  const { beforeBegin } = options
  if (beforeBegin !== undefined && typeof beforeBegin !== 'function') {
    throw invalid('createSandboxSession: `beforeBegin` must be a function returning a promise.')
  }
  return {
    sessions,
    conversationId,
    tenant,
    workingDirectory,
    commandTimeoutMs,
    endGraceMs,
    description,
    abortSignal: options.abortSignal,
    ...(beforeBegin === undefined ? {} : { beforeBegin }),
  }
}

/** A number of milliseconds >= 0, or `fallback` when undefined. */
export function checkMs(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalid(`\`${name}\` must be a number of milliseconds >= 0, got ${String(value)}.`)
  }
  return value
}

function defaultDescription(workingDirectory: string): string {
  return (
    `A Linux sandbox that belongs to this conversation and is kept between its turns (paused while the ` +
    `user is away). Commands run with bash in ${workingDirectory}; relative paths resolve against it. ` +
    `Files, installed packages and, usually, interpreter variables survive from one turn to the next; ` +
    `if they did not, the first tool result of the turn says so.`
  )
}

/** A session's prewarm mode. @throws SandkeepError INVALID_ARGUMENT for anything but `true` or `'auto'` */
export function checkPrewarm(mode: unknown): true | 'auto' {
  if (mode !== true && mode !== 'auto') throw invalid(`prewarm takes true or 'auto', got ${String(mode)}.`)
  return mode
}
