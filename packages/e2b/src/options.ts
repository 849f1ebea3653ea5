import { SandkeepError, type SnapshotKeeps } from '@sandkeep/core/provider'
import { DEFAULT_MAX_OUTPUT_CHARS } from './output.js'

/** Options of {@link createE2BProvider}. Each connection option falls back to the SDK's environment variable. */
export interface E2BProviderOptions {
  /** API key; default `E2B_API_KEY`. Never logged or stored by sandkeep. */
  apiKey?: string
  /** Control-plane URL; default `E2B_API_URL`, else `https://api.<domain>`. */
  apiUrl?: string
  /** envd and code-interpreter URL for every sandbox; default `E2B_SANDBOX_URL` (needed for local-e2b). */
  sandboxUrl?: string
  /** E2B domain; default `E2B_DOMAIN`, else `e2b.app`. */
  domain?: string
  /** Timeout of each HTTP request to E2B, ms; default the SDK's 60 000. */
  requestTimeoutMs?: number
  /** Template for `create`; default `'code-interpreter-v1'`. */
  template?: string
  /** Extra HTTP headers sent on every request (never put secrets you would not send to E2B here). */
  headers?: Record<string, string>
  /**
   * Most characters (UTF-16 units) kept of each output stream of a command or cell (`stdout`, `stderr`)
   * and of a cell's result `text`; past it the middle is left out and a marker says how much. Default
   * {@link DEFAULT_MAX_OUTPUT_CHARS} (16 Mi).
   */
  maxOutputChars?: number
  /**
   * The snapshot capability (`createSnapshot`, `createFromSnapshot`, `deleteSnapshot`, `listSnapshots`), and
   * whether a snapshot keeps memory: E2B cloud's keep the memory and the files (the default, `{}`); a
   * local-e2b host's keep the files only, so pass `{ keepsMemory: false }` for one (the host cannot be told
   * apart through the API without a request). `false`: no snapshot capability.
   */
  snapshots?: { keepsMemory?: boolean } | false
}

/** The output caps every handle applies. */
export interface OutputLimits {
  maxOutputChars: number
}

/** The SDK connection options every call passes (only those given; the SDK reads the rest from env). */
export type Connection = Pick<
  E2BProviderOptions,
  'apiKey' | 'apiUrl' | 'sandboxUrl' | 'domain' | 'requestTimeoutMs' | 'headers'
>

export const DEFAULT_TEMPLATE = 'code-interpreter-v1'
const KNOWN = new Set([
  'apiKey',
  'apiUrl',
  'sandboxUrl',
  'domain',
  'requestTimeoutMs',
  'template',
  'headers',
  'maxOutputChars',
  'snapshots',
])

function invalid(message: string): SandkeepError {
  return new SandkeepError({ code: 'INVALID_ARGUMENT', message })
}

/** @throws SandkeepError INVALID_ARGUMENT for an unknown option or a value of the wrong kind. */
export function checkOptions(options: E2BProviderOptions): void {
  if (typeof options !== 'object' || options === null)
    throw invalid('createE2BProvider options must be an object.')
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key))
      throw invalid(`createE2BProvider has no option '${key}'. Known: ${[...KNOWN].join(', ')}.`)
  }
  for (const key of ['apiKey', 'apiUrl', 'sandboxUrl', 'domain', 'template'] as const) {
    const value = options[key]
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      throw invalid(`createE2BProvider option '${key}' must be a non-empty string.`)
    }
  }
  for (const key of ['apiUrl', 'sandboxUrl'] as const) {
    const value = options[key]
    if (value !== undefined && !URL.canParse(value))
      throw invalid(`createE2BProvider option '${key}' must be a URL.`)
  }
  const timeout = options.requestTimeoutMs
  if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 0)) {
    throw invalid('createE2BProvider option requestTimeoutMs must be a non-negative integer (ms).')
  }
  const maxOutputChars = options.maxOutputChars
  if (maxOutputChars !== undefined && (!Number.isSafeInteger(maxOutputChars) || maxOutputChars < 1)) {
    throw invalid('createE2BProvider option maxOutputChars must be a positive integer (characters).')
  }
  const snapshots = options.snapshots
  if (
    snapshots !== undefined &&
    snapshots !== false &&
    (typeof snapshots !== 'object' ||
      snapshots === null ||
      Object.keys(snapshots).some((key) => key !== 'keepsMemory') ||
      !['boolean', 'undefined'].includes(typeof snapshots.keepsMemory))
  ) {
    throw invalid('createE2BProvider option snapshots must be false or { keepsMemory?: boolean }.')
  }
  if (options.headers !== undefined) {
    if (typeof options.headers !== 'object' || options.headers === null)
      throw invalid('headers must be an object of strings.')
    for (const value of Object.values(options.headers)) {
      if (typeof value !== 'string') throw invalid('headers must be an object of strings.')
    }
  }
}

/** The connection options that were given, without the undefined ones. */
export function connectionOf(options: E2BProviderOptions): Connection {
  return {
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    ...(options.apiUrl !== undefined ? { apiUrl: options.apiUrl } : {}),
    ...(options.sandboxUrl !== undefined ? { sandboxUrl: options.sandboxUrl } : {}),
    ...(options.domain !== undefined ? { domain: options.domain } : {}),
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
  }
}

/** The output caps of the options, with their defaults. */
export function outputLimitsOf(options: E2BProviderOptions): OutputLimits {
  return { maxOutputChars: options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS }
}

/** What a snapshot keeps, by the options; undefined without the snapshot capability. */
export function snapshotKeepsOf(options: E2BProviderOptions): SnapshotKeeps | undefined {
  if (options.snapshots === false) return undefined
  return { files: true, memory: options.snapshots?.keepsMemory ?? true }
}

/** The SDK options of one call: the connection, with the call's signal when it has one. */
export function requestOptions(connection: Connection, signal: AbortSignal | undefined) {
  return signal ? { ...connection, signal } : connection
}
