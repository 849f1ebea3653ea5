// The sandbox's identity and its minimal /etc: its `user`, the generated files (passwd, group, hosts,
// resolv.conf, the lean profile) and the allow list of host /etc entries bound read-only.
import { readdirSync, readFileSync } from 'node:fs'

/**
 * uid and gid of a sandbox's `user` inside it: 1000, as E2B's. Each sandbox's user namespace maps it onto a
 * host uid of the sandbox's own (id-ranges.ts), which no real account and no other sandbox has.
 */
export const SANDBOX_USER_ID = 1000

/** Who a sandbox's processes run as: E2B's `user`, or uid 0 without capabilities when the template asks. */
export type SandboxUser = 'user' | 'root'

/**
 * Entries of the host's /etc a sandbox sees: the dynamic loader's cache, TLS roots, alternatives (python3,
 * editors), the interpreters' site configuration (matplotlib's too), name-service tables, time zone. Nothing
 * with credentials.
 */
const HOST_ETC_ALLOWED = [
  'alternatives',
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'debian_version',
  'ethertypes',
  // fontconfig's configuration: matplotlib asks fc-list for the fonts when it first builds its cache.
  'fonts',
  'gai.conf',
  'host.conf',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'locale.alias',
  'localtime',
  'magic',
  'magic.mime',
  // Debian's matplotlib reads its defaults from /etc/matplotlibrc and refuses to import without it.
  'matplotlibrc',
  'mime.types',
  'networks',
  'os-release',
  'profile.d',
  'protocols',
  'python3',
  // Debian's R reads its site configuration (library paths, Renviron) from /etc/R.
  'R',
  'services',
  'shells',
  'ssl',
  'terminfo',
  'timezone',
]

/** The host /etc entries bound into a sandbox (the allowed ones that exist, plus python3.X directories). */
export function hostEtcEntries(): string[] {
  let names: string[]
  try {
    names = readdirSync('/etc')
  } catch {
    return []
  }
  // java-<n>-openjdk: the JDK's own configuration (security providers, jvm.cfg), linked from its conf/.
  return names.filter(
    (name) =>
      HOST_ETC_ALLOWED.includes(name) || /^python3\.\d+$/.test(name) || /^java-\d+-openjdk$/.test(name),
  )
}

/** The generated part of a sandbox's /etc: its own users, hosts and name service, the lean profile. */
export function sandboxEtcFiles(): Record<string, string> {
  const id = SANDBOX_USER_ID
  let resolv = 'nameserver 127.0.0.1\n'
  try {
    // Name servers only: the host's file may carry search domains and options that say where it runs.
    const servers = readFileSync('/etc/resolv.conf', 'utf8')
      .split('\n')
      .filter((line) => /^nameserver\s/.test(line))
    if (servers.length > 0) resolv = `${servers.join('\n')}\n`
  } catch {}
  return {
    passwd: [
      'root:x:0:0:root:/root:/bin/bash',
      `user:x:${id}:${id}:user:/home/user:/bin/bash`,
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      '',
    ].join('\n'),
    group: ['root:x:0:', `user:x:${id}:`, 'nogroup:x:65534:', ''].join('\n'),
    hosts: '127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n',
    hostname: 'sandbox\n',
    'resolv.conf': resolv,
    'nsswitch.conf':
      'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n',
    profile: SANDBOX_PROFILE,
  }
}

/**
 * Commands E2B's base template has that this machine may lack under that name (`python`, where the host has
 * only python3): links the namespace makes at start, last on PATH so that a real one wins.
 */
export const SANDBOX_ALIAS_DIR = '/opt/sandkeep/bin'

/** PATH of every sandbox process. */
export const SANDBOX_PATH = `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${SANDBOX_ALIAS_DIR}`

/** The sandbox's /etc/profile: PATH plus /etc/profile.d, without the host profile's per-login subshells. */
const SANDBOX_PROFILE = `# /etc/profile of a sandkeep local-e2b sandbox
export PATH="${SANDBOX_PATH}"
for i in /etc/profile.d/*.sh; do
  [ -r "$i" ] && . "$i"
done
unset i
`
