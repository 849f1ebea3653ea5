// Which user an envd request acts as, as envd decides it: the one it names (`Authorization: Basic
// base64(<user>:)` on the RPCs, `username` on /files), else the sandbox's default (its template's user). The
// sandbox has two: `user` (uid 1000) and `root` (uid 0 of its user namespace). Another name is refused as envd
// refuses a user its /etc/passwd lacks.
import type { IncomingMessage } from 'node:http'
import { homeOf } from './paths.js'
import type { SandboxUser } from './runtime/etc-files.js'

/** A request named a user the sandbox does not have. */
export class UnknownUserError extends Error {
  override readonly name = 'UnknownUserError'
}

/** The user name of `Authorization: Basic base64(<user>:)`, if the request has one. */
export function authorizationUser(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization
  if (typeof header !== 'string' || !header.startsWith('Basic ')) return undefined
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8')
  return decoded.slice(0, Math.max(0, decoded.indexOf(':')))
}

/** `name` as a sandbox user; none (or empty) is `fallback`; an unknown one throws {@link UnknownUserError}. */
export function sandboxUserOf(name: string | null | undefined, fallback: SandboxUser): SandboxUser {
  if (name === undefined || name === null || name === '') return fallback
  if (name === 'root' || name === 'user') return name
  throw new UnknownUserError(`invalid username: '${name.slice(0, 64)}'`)
}

/** What envd sets for the user a process runs as: HOME, USER, LOGNAME. */
export function userEnvironment(user: SandboxUser): Record<string, string> {
  return { HOME: homeOf(user), USER: user, LOGNAME: user }
}
