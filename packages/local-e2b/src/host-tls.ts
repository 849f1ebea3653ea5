// TLS on the host's one port, for clients that use E2B's https URLs as they are: the SDK builds
// `https://<port>-<id>.<domain>` for getHost (E2B's own tests fetch exactly that), `https://49983-<id>.<domain>`
// for envd and `https://api.<domain>` for the API when no URL is given. The port answers plain HTTP and TLS
// alike (a TLS client speaks first, with a handshake record, byte 0x16). Certificates come from the host's
// own certificate authority in `tlsDir`, made there with openssl on first use and kept for the next start,
// so a client trusts it once (Node: NODE_EXTRA_CA_CERTS=<tlsDir>/ca.pem). Each name under the domain gets its
// own certificate, made when a client first asks for it by SNI: a wildcard `*.localhost` would be a wildcard
// on a top-level name, which TLS clients refuse.
import { execFile, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import type { Server as HttpServer } from 'node:http'
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net'
import { join } from 'node:path'
import { createSecureContext, createServer as createTlsServer, type SecureContext } from 'node:tls'
import { LocalE2BError } from './errors.js'

/** Names served with a certificate of their own; past this, older ones are made again when asked. */
const MAX_NAMES = 2048
/** Days a per-name certificate is valid (made again on the next host start anyway). */
const LEAF_DAYS = 30

/** The host's TLS: its CA file and the context for each name a client asks for. */
export interface HostTls {
  /** PEM file of the host's certificate authority: what clients must trust. */
  caFile: string
  /** Accepts plain HTTP and TLS on `port`, both served by `server`. */
  listen(server: HttpServer, port: number, hostname: string): Promise<NetServer>
}

function openssl(args: string[]): string {
  return execFileSync('openssl', args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  })
}

/** The CA and the leaf key in `dir`, made when missing (keys mode 0600). */
function ensureAuthority(dir: string): { caFile: string; caKey: string; leafKey: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const caFile = join(dir, 'ca.pem')
  const caKey = join(dir, 'ca.key')
  const leafKey = join(dir, 'leaf.key')
  if (!existsSync(caFile) || !existsSync(caKey)) {
    openssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      caKey,
      '-out',
      caFile,
      '-days',
      '3650',
      '-subj',
      '/CN=sandkeep local-e2b CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE,pathlen:0',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ])
    chmodSync(caKey, 0o600)
  }
  if (!existsSync(leafKey)) {
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', leafKey])
    chmodSync(leafKey, 0o600)
  }
  return { caFile, caKey, leafKey }
}

/** openssl's arguments for a certificate of `names` (DNS names or IP addresses), signed by the CA. */
function leafArguments(paths: { caFile: string; caKey: string; leafKey: string }, names: string[]): string[] {
  const alternatives = names.map((name) => (/^[\d.]+$|:/.test(name) ? `IP:${name}` : `DNS:${name}`)).join(',')
  return [
    'req',
    '-new',
    '-x509',
    '-key',
    paths.leafKey,
    '-CA',
    paths.caFile,
    '-CAkey',
    paths.caKey,
    '-set_serial',
    `0x${randomBytes(12).toString('hex')}`,
    '-days',
    String(LEAF_DAYS),
    '-subj',
    `/CN=${names[0]}`,
    '-addext',
    `subjectAltName=${alternatives}`,
    '-addext',
    'basicConstraints=critical,CA:FALSE',
    '-addext',
    'keyUsage=critical,digitalSignature',
    '-addext',
    'extendedKeyUsage=serverAuth',
  ]
}

/**
 * Prepares TLS from `dir` (CA made there when missing). `domainHost` gives the domain's host name once the
 * host listens: certificates are made for it, `api.` under it and `<port>-<id>.` under it, nothing else.
 * Throws LocalE2BError UNSUPPORTED without openssl.
 */
export function prepareHostTls(dir: string, domainHost: () => string): HostTls {
  let paths: ReturnType<typeof ensureAuthority>
  try {
    paths = ensureAuthority(dir)
  } catch (error) {
    throw new LocalE2BError({
      code: 'UNSUPPORTED',
      message: `tlsDir needs openssl to make the host's certificate authority: ${(error as Error).message}`,
      cause: error,
    })
  }
  const key = readFileSync(paths.leafKey)
  const contextOf = (cert: string) => createSecureContext({ key, cert })
  // Without SNI (a client that dialled an address), or for a name not ours: loopback's names and addresses.
  const fallbackCert = openssl(leafArguments(paths, ['localhost', '127.0.0.1', '::1']))
  const fallback = contextOf(fallbackCert)
  const contexts = new Map<string, Promise<SecureContext>>()
  // One openssl at a time: a client naming many sandboxes waits in line instead of forking many.
  let queue: Promise<unknown> = Promise.resolve()

  const allowed = (name: string) => {
    const host = domainHost().toLowerCase()
    if (name === host || name === `api.${host}`) return true
    return name.endsWith(`.${host}`) && /^\d{1,5}-[a-z0-9_]{1,128}$/.test(name.slice(0, -host.length - 1))
  }
  const contextFor = (servername: string): Promise<SecureContext> => {
    const name = servername.toLowerCase()
    if (!allowed(name)) return Promise.resolve(fallback)
    const known = contexts.get(name)
    if (known) return known
    if (contexts.size >= MAX_NAMES) contexts.delete(contexts.keys().next().value as string)
    const made = queue.then(
      () =>
        new Promise<SecureContext>((resolve, reject) => {
          execFile('openssl', leafArguments(paths, [name]), { timeout: 30_000 }, (error, stdout) =>
            error ? reject(error) : resolve(contextOf(stdout)),
          )
        }),
    )
    queue = made.catch(() => {})
    made.catch(() => contexts.delete(name))
    contexts.set(name, made)
    return made
  }

  return {
    caFile: paths.caFile,
    listen(server, port, hostname) {
      const secure = createTlsServer(
        {
          SNICallback: (servername, callback) => {
            contextFor(servername).then(
              (context) => callback(null, context),
              (error: Error) => callback(error),
            )
          },
          key,
          cert: fallbackCert,
        },
        (socket) => server.emit('connection', socket),
      )
      secure.on('tlsClientError', (_error, socket) => socket.destroy())
      const front = createNetServer((socket: Socket) => {
        socket.on('error', () => socket.destroy())
        socket.once('readable', () => {
          const first = socket.read(1) as Buffer | null
          if (!first) return void socket.destroy()
          socket.unshift(first)
          if (first[0] === 0x16) secure.emit('connection', socket)
          else server.emit('connection', socket)
        })
      })
      return new Promise((resolve, reject) => {
        front.once('error', reject)
        front.listen(port, hostname, () => {
          front.off('error', reject)
          resolve(front)
        })
      })
    },
  }
}
