// Isolation, and the refusal to run unisolated unasked: what code inside a sandbox can see of
// the host (its /etc, its paths) and who it runs as, tried through the unmodified SDKs as a user would.
import { readFileSync, statSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { LocalE2BError, SANDBOX_USER_ID, startLocalE2B } from '../src/index.js'
import { commandResult, forkPastPidsScript, useTestHost, waitUntil } from './helpers.js'

/** CapEff of root inside a sandbox: CAP_CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID. */
const ROOT_CAPABILITIES = '00000000000000fb'

const run = commandResult

describe('a minimal /etc and an unprivileged user', () => {
  const t = useTestHost({ templateOptions: { 'root-box': { user: 'root' } } })

  it('runs commands as `user` without capabilities, in a /etc without shadow or host credentials', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const identity = await run(sandbox, 'id -un; id -u; id -gn; grep CapEff /proc/self/status')
    expect(identity.stdout.split('\n').slice(0, 3)).toEqual(['user', String(SANDBOX_USER_ID), 'user'])
    expect(identity.stdout).toMatch(/CapEff:\s+0{16}/)
    const etc = await run(sandbox, 'ls -A /etc')
    const names = etc.stdout.split('\n')
    for (const secret of [
      'shadow',
      'gshadow',
      'shadow-',
      'gshadow-',
      'ssh',
      'pip.conf',
      'npmrc',
      'gitconfig',
      'subuid',
    ]) {
      expect(names).not.toContain(secret)
    }
    expect(names).toEqual(
      expect.arrayContaining(['passwd', 'group', 'hosts', 'resolv.conf', 'nsswitch.conf']),
    )
    expect((await run(sandbox, 'cat /etc/shadow')).exitCode).not.toBe(0)
    // /etc is read-only, even for what the sandbox's files could name.
    expect((await run(sandbox, 'echo x >> /etc/passwd')).exitCode).not.toBe(0)
    expect((await run(sandbox, 'touch /etc/new')).exitCode).not.toBe(0)
    // The interpreters, TLS roots and pip still work with it.
    const tools = await run(
      sandbox,
      "python3 -c \"import ssl; ssl.create_default_context(); print('py ok')\" && node -e \"require('tls').rootCertificates.length && console.log('node ok')\" && pip --version >/dev/null && echo pip ok && getent passwd user",
    )
    expect(tools.stdout).toBe(
      `py ok\nnode ok\npip ok\nuser:x:${SANDBOX_USER_ID}:${SANDBOX_USER_ID}:user:/home/user:/bin/bash\n`,
    )
    // The host's processes (root) are not the sandbox's: nothing of the host's file tree is writable.
    expect((await run(sandbox, 'touch /usr/x; touch /x')).exitCode).not.toBe(0)
    await sandbox.kill()
  })

  it('gives the home and what the host writes for the sandbox to `user`', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const view = t.host.getSandbox(sandbox.sandboxId)
    // `user` inside is a host uid of this sandbox's own, far from any account's.
    expect(view?.owner?.uid).toBeGreaterThan(1_000_000)
    expect(view && statSync(view.homeDir).uid).toBe(view?.owner?.uid)
    await sandbox.files.write('/home/user/sub/uploaded.txt', 'up')
    await sandbox.files.makeDir('/home/user/made')
    const owned = await run(
      sandbox,
      'stat -c %U sub sub/uploaded.txt made && echo more >> sub/uploaded.txt && touch made/x /tmp/x && echo ok',
    )
    expect(owned.stdout).toBe('user\nuser\nuser\nok\n')
    expect((await sandbox.commands.run('id -un', { user: 'user' })).stdout).toBe('user\n')
    await sandbox.kill()
  })

  it('runs the code interpreter kernels as `user`', async () => {
    const sandbox = await CodeSandbox.create({ ...t.opts, template: 'code-interpreter-v1' } as never)
    expect((await sandbox.runCode('import os; os.getuid()')).text).toBe(String(SANDBOX_USER_ID))
    expect((await sandbox.runCode('process.getuid()', { language: 'javascript' })).text).toBe(
      String(SANDBOX_USER_ID),
    )
    await sandbox.kill()
  })

  it('runs a template that asks for root as uid 0 with only the namespace’s file and process powers', async () => {
    const sandbox = await Sandbox.create('root-box', t.opts)
    const identity = await run(sandbox, 'id -u; grep CapEff /proc/self/status; cat /etc/shadow')
    expect(identity.stdout).toBe(`0\nCapEff:\t${ROOT_CAPABILITIES}\n`)
    expect(identity.exitCode).not.toBe(0)
    expect((await sandbox.commands.run('id -u', { user: 'root' })).stdout).toBe('0\n')
    // `user` is there too, without any capability.
    expect(
      (await sandbox.commands.run('id -u; grep CapEff /proc/self/status', { user: 'user' })).stdout,
    ).toMatch(/^1000\nCapEff:\s+0{16}\n$/)
    // Without CAP_SYS_ADMIN, and with CAP_DAC_OVERRIDE only over the files its namespace maps, root can
    // neither remount nor write the system.
    // Writing the value it already has: harmless should the cover ever fail.
    const sysctl = 'cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern'
    for (const attempt of [
      sysctl,
      'mount -o remount,rw /etc',
      'touch /usr/x',
      'touch /x',
      'touch /etc/x',
      'cat /etc/shadow',
    ]) {
      expect((await run(sandbox, attempt)).exitCode, attempt).not.toBe(0)
    }
    expect((await run(sandbox, 'touch /home/user/x /tmp/x /var/tmp/x /dev/shm/x && echo ok')).stdout).toBe(
      'ok\n',
    )
    await sandbox.kill()
  })
})

describe('no host path inside a sandbox', () => {
  const t = useTestHost()

  it('mountinfo, /proc/mounts, environment and cwd name no host directory', async () => {
    const sandbox = await CodeSandbox.create({ ...t.opts, template: 'code-interpreter-v1' } as never)
    // /proc/1 is bubblewrap's pid 1, whose arguments name the host paths it binds unless they came by fd.
    const seen = await sandbox.commands.run(
      'cat /proc/self/mountinfo /proc/mounts; env; pwd; readlink /proc/self/cwd; cat /proc/self/cgroup; for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < $f; echo; done',
    )
    expect(seen.stdout).toContain('bwrap ')
    // The kernels: their environment and working directory.
    const kernel = await sandbox.runCode(
      'import os; print(open("/proc/self/mountinfo").read()); print(dict(os.environ)); print(os.getcwd())',
    )
    const text = `${seen.stdout}\n${kernel.logs.stdout.join('')}`
    expect(text).toContain('/home/user')
    // The sandbox's own /root (its disk) is mounted there; nothing under the host's /root may show.
    const forbidden = [t.host.stateDir, `${tmpdir()}/sandkeep`, '/work', process.cwd(), '/root/']
    for (const hostPath of forbidden) expect(text).not.toContain(hostPath)
    await sandbox.kill()
  })
})

describe("the host kernel's view of the machine", () => {
  const t = useTestHost({ templateOptions: { 'root-box': { user: 'root' } } })

  it('/proc/partitions and /proc/cmdline show nothing of the host, to user and root, and cannot be unmasked', async () => {
    const hostPartitions = readFileSync('/proc/partitions', 'utf8')
    const hostCmdline = readFileSync('/proc/cmdline', 'utf8').trim()
    const devices = hostPartitions
      .split('\n')
      .slice(2)
      .map((line) => line.trim().split(/\s+/)[3])
      .filter((name): name is string => Boolean(name))
    for (const template of ['base', 'root-box']) {
      const sandbox = await Sandbox.create({ ...t.opts, template })
      try {
        const seen = await run(sandbox, 'cat /proc/partitions; echo ---; cat /proc/cmdline')
        expect(seen.exitCode).toBe(0)
        const [partitions = '', cmdline = ''] = seen.stdout.split('---\n')
        expect(partitions.trim()).toBe('major minor  #blocks  name')
        for (const device of devices) expect(partitions).not.toContain(device)
        expect(cmdline.trim()).not.toBe(hostCmdline)
        for (const word of hostCmdline.split(/\s+/).filter((part) => part.length > 8))
          expect(cmdline).not.toContain(word)
        // Root cannot take the cover off (no CAP_SYS_ADMIN in a namespace it does not own).
        const unmask = await run(
          sandbox,
          'umount /proc/cmdline; umount /proc/partitions; cat /proc/cmdline',
          {
            user: 'root',
          },
        )
        expect(unmask.stdout.trim()).not.toBe(hostCmdline)
      } finally {
        await sandbox.kill()
      }
    }
  })
})

describe('root inside a sandbox (user: root, sudo)', () => {
  const t = useTestHost({ templateOptions: { 'few-pids': { limits: { pids: 48 } } } })

  it('has root’s powers over the sandbox only: not the system, the host, its mounts or namespaces', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const status = await sandbox.commands.run(
      'grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status',
      {
        user: 'root',
      },
    )
    expect(status.stdout).toBe(
      `CapEff:\t${ROOT_CAPABILITIES}\nCapBnd:\t${ROOT_CAPABILITIES}\nNoNewPrivs:\t1\nSeccomp:\t2\n`,
    )
    const attempts = [
      'touch /usr/x',
      'touch /x',
      'touch /etc/x',
      'echo x >> /etc/passwd',
      'cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern',
      'echo 00000000-0000-4000-8000-000000000000 > /proc/sys/kernel/random/boot_id',
      'echo h > /proc/sysrq-trigger',
      'mount -o remount,rw /',
      'mount -t tmpfs none /mnt',
      'umount /etc',
      'mount -t cgroup2 none /tmp',
      'ls /sys/fs/cgroup',
      'unshare -m true',
      'unshare -n true',
      'unshare -U true',
      'unshare -p -f true',
      'chroot / true',
      'mknod /tmp/dev b 7 0',
      'prlimit --pid $$ --nofile=2000000:2000000',
      // bubblewrap's pid 1 and the init are the host's root's, not the sandbox's.
      'kill -9 1',
      'kill -9 2',
      'cat /etc/shadow',
    ]
    for (const command of attempts) {
      for (const [how, line] of [
        ['user: root', command],
        ['sudo', `sudo sh -c '${command.replaceAll("'", "'\\''")}'`],
      ] as const) {
        const result = await run(sandbox, line, how === 'user: root' ? { user: 'root' } : {})
        expect(result.exitCode, `${how}: ${command}`).not.toBe(0)
      }
    }
    // The host's /root is not the sandbox's: root's home there is its own, on the sandbox's disk.
    expect((await sandbox.commands.run('ls -A /root', { user: 'root' })).stdout).toBe('')
    const mounts = await sandbox.commands.run('cat /proc/self/mountinfo', { user: 'root' })
    expect(mounts.stdout).not.toContain(t.host.stateDir)
    await sandbox.kill()
  })

  it('stays inside the limits: root forks past pids.max fail with EAGAIN', async () => {
    const sandbox = await Sandbox.create('few-pids', t.opts)
    const script = forkPastPidsScript(200, 48)
    expect((await run(sandbox, `python3 -c '${script}'`, { user: 'root' })).stdout).toBe('EAGAIN True\n')
    expect((await run(sandbox, `sudo python3 -c '${script}'`)).stdout).toBe('EAGAIN True\n')
    await sandbox.kill()
  })

  it('sudo serves only its own sandbox, survives hostile clients, and trusts only root’s socket', async () => {
    const first = await Sandbox.create(t.opts)
    const second = await Sandbox.create(t.opts)
    await first.commands.run('sudo touch /root/first-only')
    expect((await second.commands.run('sudo ls -A /root')).stdout).toBe('')
    // The socket is in the sandbox's network namespace, not the host's.
    const fromHost = await new Promise<string>((resolve) => {
      const socket = connect({ path: '\0sandkeep-sudo' })
      socket.once('connect', () => {
        socket.destroy()
        resolve('connected')
      })
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
    })
    expect(fromHost).toBe('ECONNREFUSED')
    // Hostile clients (as `user`): garbage, a huge length, a request without stdio, one that never ends.
    await first.files.write('/tmp/hostile.py', HOSTILE_CLIENTS)
    expect((await first.commands.run('python3 /tmp/hostile.py')).stdout).toBe('sent\n')
    expect((await first.commands.run('sudo id -u')).stdout).toBe('0\n')
    // Only root may serve sudo: not a broker started by `user`, nor a listener `user` put in its place.
    expect((await run(first, '/opt/sandkeep/bin/sudo --sandkeep-broker')).exitCode).not.toBe(0)
    await first.files.write('/tmp/squat.py', SQUATTER)
    const squatted = await run(
      first,
      "sudo pkill -KILL -f '^/opt/sandkeep/bin/sudo --sandkeep-broker$'; python3 /tmp/squat.py & sleep 0.5; sudo id -u; kill $!",
    )
    expect(squatted.stderr).toContain("not root's; refusing")
    expect(squatted.stdout).not.toContain('0\n')
    // The host starts the broker again.
    await waitUntil(async () => (await run(first, 'sudo id -u')).stdout === '0\n', 10_000)
    await first.kill()
    await second.kill()
  })
})

/** Python: bad requests to the sudo broker's socket, as the sandbox's user; prints `sent`. */
const HOSTILE_CLIENTS = `
import socket, struct, os
def client():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\\0sandkeep-sudo")
    return s
s = client(); s.sendall(b"garbage" * 1000); s.close()
s = client(); s.sendall(struct.pack("=I", 0xFFFFFFFF)); s.close()
s = client(); s.sendall(struct.pack("=I", 8) + b"v1\\x000\\x000\\x00"); s.close()
s = client(); socket.send_fds(s, [struct.pack("=I", 100)], [0, 1, 2]); s.sendall(b"v1\\x00" * 10); s.close()
slow = client()
print("sent")
`

/** Python: listens on the sudo socket's name as the sandbox's user, answering exit status 0. */
const SQUATTER = `
import socket, struct
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\\0sandkeep-sudo"); s.listen(1)
while True:
    c, _ = s.accept()
    c.sendall(struct.pack("=i", 0))
`

describe('isolation without bubblewrap', () => {
  it('refuses to start unisolated unless isolation "none" is asked for, which warns', async () => {
    process.env.SANDKEEP_LOCAL_E2B_NO_BWRAP = '1'
    try {
      for (const isolation of [undefined, 'auto', 'bubblewrap'] as const) {
        const attempt = startLocalE2B({ logger: () => {}, ...(isolation ? { isolation } : {}) })
        await expect(attempt).rejects.toBeInstanceOf(LocalE2BError)
        await expect(attempt).rejects.toThrow(/isolation: 'none'/)
      }
      const warnings: string[] = []
      const host = await startLocalE2B({ isolation: 'none', logger: (line) => void warnings.push(line) })
      expect(host.isolation).toBe('none')
      expect(warnings.join('\n')).toMatch(/UNISOLATED/)
      await host.close()
    } finally {
      delete process.env.SANDKEEP_LOCAL_E2B_NO_BWRAP
    }
  })
})

/** Python inside a sandbox: calls each named syscall (harmless arguments) and prints `name errno`. */
const SYSCALLS = `
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
numbers = {
    'x86_64': {'io_uring_setup': 425, 'perf_event_open': 298, 'bpf': 321, 'userfaultfd': 323, 'syslog': 103},
    'aarch64': {'io_uring_setup': 425, 'perf_event_open': 241, 'bpf': 280, 'userfaultfd': 282, 'syslog': 116},
}[platform.machine()]
params = ctypes.create_string_buffer(120)
attr = ctypes.create_string_buffer(128)
# perf_event_attr: type 1 (software), size, config 0 (cpu clock), then exclude_kernel and exclude_hv set.
attr[0:4] = (1).to_bytes(4, 'little'); attr[4:8] = (128).to_bytes(4, 'little')
attr[40:48] = (0x60).to_bytes(8, 'little')
calls = {
    'io_uring_setup': (1, params),
    'perf_event_open': (attr, 0, -1, -1, 0),
    'bpf': (0, None, 0),
    'userfaultfd': (1,),
    'syslog': (3, ctypes.create_string_buffer(64), 64),
}
for name, args in calls.items():
    result = libc.syscall(numbers[name], *args)
    print(name, 0 if result >= 0 else ctypes.get_errno())
`

describe('a syscall filter', () => {
  const t = useTestHost({ templateOptions: { 'root-box': { user: 'root' } } })

  it('refuses io_uring, perf events, BPF, userfaultfd and the kernel log with EPERM, as user and root', async () => {
    for (const template of ['base', 'root-box']) {
      const sandbox = await Sandbox.create(template, t.opts)
      await sandbox.files.write('/tmp/syscalls.py', SYSCALLS)
      const result = await sandbox.commands.run('python3 /tmp/syscalls.py')
      const errno = Object.fromEntries(
        result.stdout
          .trim()
          .split('\n')
          .map((line) => line.split(' ')),
      )
      const EPERM = '1'
      expect(errno, template).toEqual({
        io_uring_setup: EPERM,
        perf_event_open: EPERM,
        bpf: EPERM,
        userfaultfd: EPERM,
        syslog: EPERM,
      })
      // Everything else still works: a server, a compiler's worth of syscalls, threads.
      const work = await sandbox.commands.run(
        'python3 -c \'import threading, socket, subprocess; t = threading.Thread(target=print); t.start(); t.join(); s = socket.socket(); s.bind(("127.0.0.1", 0)); print(subprocess.run(["true"]).returncode)\'',
      )
      expect(work.stdout).toBe('\n0\n')
      await sandbox.kill()
    }
  })
})
