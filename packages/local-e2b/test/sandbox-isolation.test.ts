// What one sandbox can do to another through the kernel's per-user state: each sandbox runs in a user
// namespace of its own, on host ids nobody else has, so that keyrings and per-user limits are its own.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { startTestHost, stopTestHost, useTestHost } from './helpers.js'

/** Python inside a sandbox: `put <secret>` adds a key to the user keyring, `get` prints it or `none`. */
const KEYRING = `
import ctypes, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
add_key, keyctl = {'x86_64': (248, 250), 'aarch64': (217, 219)}[platform.machine()]
USER_KEYRING, SESSION_KEYRING, LINK, SEARCH, READ = -4, -3, 8, 10, 11
if sys.argv[1] == 'put':
    secret = sys.argv[2].encode()
    key = libc.syscall(add_key, b'user', b'sandkeep-test', secret, len(secret), USER_KEYRING)
    print('added' if key >= 0 else 'refused:%d' % ctypes.get_errno())
else:
    # As a login session does: the user keyring linked into the session's, so that its keys are possessed.
    libc.syscall(keyctl, LINK, USER_KEYRING, SESSION_KEYRING)
    key = libc.syscall(keyctl, SEARCH, USER_KEYRING, b'user', b'sandkeep-test', 0)
    if key < 0:
        print('none')
    else:
        buffer = ctypes.create_string_buffer(256)
        size = libc.syscall(keyctl, READ, key, buffer, 256)
        print(buffer.raw[:size].decode() if size >= 0 else 'unreadable')
`

/** Python inside a sandbox: takes inotify instances until the kernel says no; prints how many it got. */
const INOTIFY = `
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < int(sys.argv[1]):
    fd = libc.inotify_init()
    if fd < 0:
        break
    fds.append(fd)
print(len(fds), flush=True)
if len(sys.argv) > 2:
    time.sleep(float(sys.argv[2]))
`

async function python(sandbox: Sandbox, script: string, args: string[]): Promise<string> {
  await sandbox.files.write('/tmp/probe.py', script)
  const result = await sandbox.commands.run(`python3 /tmp/probe.py ${args.join(' ')}`)
  return result.stdout.trim()
}

describe('sandboxes share no per-user kernel resource', () => {
  const t = useTestHost()

  it("keeps a secret in one sandbox's user keyring out of another's", async () => {
    const a = await Sandbox.create(t.opts)
    const b = await Sandbox.create(t.opts)
    const secret = `keyring-secret-${Date.now()}`
    expect(await python(a, KEYRING, ['put', secret])).toBe('added')
    // The keyring is real: a later command of the same sandbox finds the key.
    expect(await python(a, KEYRING, ['get'])).toBe(secret)
    expect(await python(b, KEYRING, ['get'])).toBe('none')
    const c = await Sandbox.create(t.opts)
    expect(await python(c, KEYRING, ['get'])).toBe('none')
    // Their host ids differ: that is what keeps the kernel's per-user accounting apart.
    const owners = [a, b, c].map((sandbox) => t.host.getSandbox(sandbox.sandboxId)?.owner?.uid)
    expect(new Set(owners).size).toBe(3)
    for (const sandbox of [a, b, c]) await sandbox.kill()
  })

  it('leaves inotify instances to every sandbox while one holds all it may have, running or paused', async () => {
    const a = await Sandbox.create(t.opts)
    const b = await Sandbox.create(t.opts)
    await a.files.write('/tmp/probe.py', INOTIFY)
    // Far more than fs.inotify.max_user_instances (128 by default): A stops at its own limit and holds it.
    const holder = await a.commands.run('python3 /tmp/probe.py 100000 600', {
      background: true,
      timeoutMs: 0,
    })
    let held = ''
    for (let attempt = 0; attempt < 100 && !/^\d+$/.test(held.trim()); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      held = holder.stdout
    }
    expect(Number(held.trim())).toBeGreaterThan(0)
    expect(Number(held.trim())).toBeLessThan(100000)
    expect(await python(a, INOTIFY, ['1'])).toBe('0')
    expect(await python(b, INOTIFY, ['4'])).toBe('4')
    await a.pause()
    expect(await python(b, INOTIFY, ['4'])).toBe('4')
    const c = await Sandbox.create(t.opts)
    expect(await python(c, INOTIFY, ['4'])).toBe('4')
    for (const sandbox of [b, c]) await sandbox.kill()
    await Sandbox.kill(a.sandboxId, t.opts)
  })
})

describe('nested user namespaces', () => {
  const t = useTestHost({ templateOptions: { 'rootless-containers': { nestedUserNamespaces: true } } })

  it('are refused inside a sandbox unless its template asks for them', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const refused = await sandbox.commands
      .run('unshare -U true 2>&1; echo "exit $?"')
      .catch((error) => error.result)
    expect(refused.stdout).toMatch(/exit [1-9]/)
    const asked = await Sandbox.create('rootless-containers', t.opts)
    expect((await asked.commands.run('unshare -U true; echo "exit $?"')).stdout).toBe('exit 0\n')
    await sandbox.kill()
    await asked.kill()
  })
})

describe('host ids across a host restart', () => {
  it("keeps a sandbox on its own range, so that its files stay its user's", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'sk-isolation-'))
    const first = await startTestHost({ stateDir })
    let second: Awaited<ReturnType<typeof startTestHost>> | undefined
    try {
      const sandbox = await Sandbox.create(first.opts)
      await sandbox.commands.run('echo v1 > kept.txt')
      const owner = first.host.getSandbox(sandbox.sandboxId)?.owner
      await first.host.close()
      // The same key: a restarted host keeps each sandbox its owner's (another key gets 404).
      second = await startTestHost({ stateDir, apiKey: first.opts.apiKey })
      const again = await Sandbox.connect(sandbox.sandboxId, second.opts)
      expect(second.host.getSandbox(sandbox.sandboxId)?.owner).toEqual(owner)
      const written = await again.commands.run('echo v2 >> kept.txt && stat -c %U kept.txt && cat kept.txt')
      expect(written.stdout).toBe('user\nv1\nv2\n')
      await again.kill()
    } finally {
      await stopTestHost(second)
      await first.host.close()
      await rm(stateDir, { recursive: true, force: true })
    }
  })
})

describe('forks and sandboxes made from snapshots', () => {
  const t = useTestHost()

  it('get a range of their own, and the files they inherit belong to their user', async () => {
    const source = await Sandbox.create(t.opts)
    await source.commands.run('mkdir -p work && echo v1 > work/state.txt')
    const forks = await source.fork({ count: 1 })
    const fork = forks[0]
    if (!(fork instanceof Sandbox)) throw new Error(`fork failed: ${String(fork)}`)
    const { snapshotId } = await source.createSnapshot()
    const restored = await Sandbox.create(snapshotId, t.opts)
    const owners = [source, fork, restored].map((sandbox) => t.host.getSandbox(sandbox.sandboxId)?.owner?.uid)
    expect(new Set(owners).size).toBe(3)
    for (const sandbox of [fork, restored]) {
      const written = await sandbox.commands.run(
        'echo v2 >> work/state.txt && stat -c %U work work/state.txt',
      )
      expect(written.stdout).toBe('user\nuser\n')
    }
    for (const sandbox of [source, fork, restored]) await sandbox.kill()
  })
})
