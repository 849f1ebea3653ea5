// Internet access for a sandbox that asks for it (allowInternetAccess: true) without the host's own network:
// the sandbox keeps its own network namespace and gets one veth pair whose host end is routed and
// masqueraded out, while an nftables table drops everything from a sandbox to the host itself (any of its
// addresses, loopback included), to the networks the host sits on, to private and special-purpose ranges and
// to other sandboxes, and all of its IPv6. Each sandbox has its own /30 in SANDBOX_NETWORK, derived from its
// host id range (machine-wide unique). Without nft and ip (as root) such a sandbox is refused.
import { execFile } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** The addresses of every sandbox's link: a /30 each (host end .1, sandbox end .2 of its block). */
const SANDBOX_NETWORK = { first: [100, 96, 0, 0], prefix: 18 } as const

/** Host-side interface names: `skv<range index>`; the sandbox side is its `eth0`. */
const INTERFACE_PREFIX = 'skv'

const TABLE = 'sandkeep_local_e2b'

/**
 * Destinations no sandbox reaches (RFC 6890's special-purpose ranges that lead to local networks or nowhere):
 * "this network", private (RFC 1918), shared/CGNAT (which holds the sandboxes' own links), loopback,
 * link-local (cloud metadata services), IETF protocol assignments, benchmarking, multicast and reserved.
 */
const BLOCKED_IPV4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/3',
]

const PATH = '/usr/sbin:/usr/bin:/sbin:/bin'

function which(binary: string): boolean {
  return PATH.split(':').some((dir) => existsSync(join(dir, binary)))
}

/** True when this machine can give a sandbox a filtered way out: root, nft and ip. */
export function canFilterInternet(): boolean {
  // SANDKEEP_LOCAL_E2B_NO_NFT=1 plays a machine without nftables, for the test of the refusal.
  if (process.env.SANDKEEP_LOCAL_E2B_NO_NFT === '1') return false
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0
  return isRoot && which('nft') && which('ip')
}

/** The networks the host's own interfaces are on (its LAN), as CIDR strings; the sandboxes' links left out. */
function hostNetworks(): string[] {
  const networks: string[] = []
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (name.startsWith(INTERFACE_PREFIX)) continue
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && address.cidr) networks.push(address.cidr)
    }
  }
  return networks
}

/** The nftables ruleset, replacing the table atomically (the add + delete pair makes it exist first). */
function ruleset(): string {
  const network = `${SANDBOX_NETWORK.first.join('.')}/${SANDBOX_NETWORK.prefix}`
  const blocked = [...BLOCKED_IPV4, ...hostNetworks()].join(', ')
  const sandboxes = `"${INTERFACE_PREFIX}*"`
  return `add table inet ${TABLE}
delete table inet ${TABLE}
table inet ${TABLE} {
  set blocked {
    type ipv4_addr
    flags interval
    auto-merge
    elements = { ${blocked} }
  }
  chain input {
    type filter hook input priority filter - 10; policy accept;
    iifname ${sandboxes} drop
  }
  chain forward {
    type filter hook forward priority filter - 10; policy accept;
    iifname ${sandboxes} meta nfproto ipv6 drop
    iifname ${sandboxes} ip daddr @blocked drop
    iifname ${sandboxes} oifname ${sandboxes} drop
    oifname ${sandboxes} ct state established,related accept
    oifname ${sandboxes} drop
  }
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    ip saddr ${network} oifname != ${sandboxes} masquerade
  }
}
`
}

let filterInstalled: Promise<void> | undefined

/** Installs the table and turns IPv4 forwarding on, once per process (again after a failure). */
function ensureFilter(): Promise<void> {
  filterInstalled ??= new Promise<void>((resolve, reject) => {
    const nft = execFile('nft', ['-f', '-'], { env: { PATH }, timeout: 10_000 }, (error, _stdout, stderr) => {
      if (error) return reject(new Error(`could not install the sandboxes' network filter: ${stderr.trim()}`))
      // Forwarding only once the filter stands: before it, a sandbox's packets would go anywhere.
      writeFileSync('/proc/sys/net/ipv4/ip_forward', '1')
      resolve()
    })
    nft.stdin?.end(ruleset())
  }).catch((error: unknown) => {
    filterInstalled = undefined
    throw error
  })
  return filterInstalled
}

/** The link of the sandbox with id range `index`: interface name, host and sandbox addresses. */
export function sandboxLink(index: number): { name: string; host: string; sandbox: string } {
  const [a, b] = SANDBOX_NETWORK.first
  const offset = index * 4
  const third = Math.floor(offset / 256)
  const fourth = offset % 256
  return {
    name: `${INTERFACE_PREFIX}${index}`,
    host: `${a}.${b}.${third}.${fourth + 1}`,
    sandbox: `${a}.${b}.${third}.${fourth + 2}`,
  }
}

async function ip(args: string[]): Promise<void> {
  await run('ip', args, { env: { PATH }, timeout: 10_000 })
}

/**
 * Gives the sandbox whose init is `initPid` (and whose id range is `index`) its filtered way out: a veth
 * pair into its network namespace, addressed, with a default route through the host.
 */
export async function connectToInternet(initPid: number, index: number): Promise<void> {
  await ensureFilter()
  const link = sandboxLink(index)
  // The previous boot's pair goes when its namespace does, which the kernel finishes asynchronously.
  await ip(['link', 'delete', link.name]).catch(() => {})
  await ip(['link', 'add', link.name, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', String(initPid)])
  await ip(['addr', 'add', `${link.host}/30`, 'dev', link.name])
  await ip(['link', 'set', link.name, 'up'])
  const inside = [
    `ip addr add ${link.sandbox}/30 dev eth0`,
    'ip link set eth0 up',
    `ip route add default via ${link.host}`,
  ].join(' && ')
  await run('nsenter', ['-t', String(initPid), '-n', '--', '/bin/sh', '-c', inside], {
    env: { PATH },
    timeout: 10_000,
  })
}
