// Preload (`node --import <this file>`) that makes every name under `localhost` resolve to loopback in this
// Node process, as RFC 6761 reserves them and as browsers, curl and systemd-resolved already do: glibc does
// not without libnss-myhostname, so `sandbox.getHost(port)` URLs (`<port>-<id>.localhost:<port>`) fail
// with ENOTFOUND in Node's fetch and http. Every other name goes to the system resolver unchanged.
import dns, { type LookupAddress, type LookupOptions } from 'node:dns'

const LOCALHOST = /(^|\.)localhost\.?$/i

/** The loopback answer for a lookup with these options (family 6 gives ::1, anything else 127.0.0.1). */
function loopback(options: LookupOptions): LookupAddress[] {
  const six = options.family === 6 || (options.family as unknown) === 'IPv6'
  const four = options.family === 4 || (options.family as unknown) === 'IPv4'
  if (six) return [{ address: '::1', family: 6 }]
  if (four || !options.all) return [{ address: '127.0.0.1', family: 4 }]
  return [
    { address: '127.0.0.1', family: 4 },
    { address: '::1', family: 6 },
  ]
}

const systemLookup = dns.lookup
const patched = (hostname: string, options: unknown, callback?: unknown) => {
  const done = (typeof options === 'function' ? options : callback) as (
    error: NodeJS.ErrnoException | null,
    address: string | LookupAddress[],
    family?: number,
  ) => void
  const given: LookupOptions =
    typeof options === 'number' ? { family: options } : typeof options === 'object' && options ? options : {}
  if (typeof hostname !== 'string' || !LOCALHOST.test(hostname))
    return (systemLookup as (...args: unknown[]) => void)(hostname, options, callback)
  const answer = loopback(given)
  process.nextTick(() => {
    if (given.all) done(null, answer)
    else done(null, (answer[0] as LookupAddress).address, (answer[0] as LookupAddress).family)
  })
}
dns.lookup = patched as typeof dns.lookup

const systemPromiseLookup = dns.promises.lookup
dns.promises.lookup = (async (hostname: string, options?: LookupOptions | number) => {
  const given: LookupOptions = typeof options === 'number' ? { family: options } : (options ?? {})
  if (typeof hostname !== 'string' || !LOCALHOST.test(hostname))
    return systemPromiseLookup(hostname, given as never)
  const answer = loopback(given)
  return given.all ? answer : answer[0]
}) as typeof dns.promises.lookup
