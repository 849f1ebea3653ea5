// Root inside a sandbox as E2B has it, through the unmodified e2b SDK: `user: 'root'` commands and file calls
// run as uid 0 with /root as home, and the sandbox's `user` has passwordless `sudo`. Root here is uid 0 of the
// sandbox's own user namespace (what it can and cannot do: security.test.ts).
import { CommandExitError, Sandbox } from 'e2b'
import { afterEach, describe, expect, it } from 'vitest'
import { commandResult, useTestHost, waitUntil } from './helpers.js'

const run = commandResult

describe('root and sudo', () => {
  const t = useTestHost()
  const created: Sandbox[] = []
  afterEach(async () => {
    for (const sandbox of created.splice(0)) await sandbox.kill().catch(() => {})
  })
  async function create(): Promise<Sandbox> {
    const sandbox = await Sandbox.create(t.opts)
    created.push(sandbox)
    return sandbox
  }

  it("runs user: 'root' commands as root, with /root as home, in the template's workdir", async () => {
    const sandbox = await create()
    const root = await sandbox.commands.run('id -u; id -un; echo "$HOME $USER $LOGNAME"; pwd', {
      user: 'root',
    })
    expect(root.stdout).toBe('0\nroot\n/root root root\n/home/user\n')
    // Root's powers over the sandbox's own files: it writes the user's, and gives files away.
    await sandbox.files.write('/home/user/private.txt', 'mine\n')
    await sandbox.commands.run('chmod 600 /home/user/private.txt')
    const powers = await sandbox.commands.run(
      'cat /home/user/private.txt && touch /root/made && chown user /root/made && stat -c "%U %a" /root /root/made',
      { user: 'root' },
    )
    expect(powers.stdout).toBe('mine\nroot 700\nuser 644\n')
    // /root is root's: `user` cannot enter it.
    expect((await run(sandbox, 'ls /root')).exitCode).not.toBe(0)
    // The default stays `user`.
    expect((await sandbox.commands.run('id -un')).stdout).toBe('user\n')
    // A user the sandbox does not have is refused, as envd refuses one its /etc/passwd lacks.
    await expect(sandbox.commands.run('id', { user: 'nobody-here' as 'user' })).rejects.toThrow(
      /invalid username/,
    )
  })

  it('reads and writes files as root: relative paths in /root, owned by root; signed URLs as root', async () => {
    const sandbox = await create()
    const [written] = await sandbox.files.write([{ path: 'hello.txt', data: 'from root' }], { user: 'root' })
    expect(written?.path).toBe('/root/hello.txt')
    expect(await sandbox.files.read('hello.txt', { user: 'root' })).toBe('from root')
    expect(await sandbox.files.exists('/root/hello.txt')).toBe(true)
    expect((await sandbox.files.list('/root', { user: 'root' })).map((entry) => entry.name)).toContain(
      'hello.txt',
    )
    expect((await sandbox.commands.run('stat -c %U /root/hello.txt', { user: 'root' })).stdout).toBe('root\n')
    await sandbox.files.makeDir('made-by-root', { user: 'root' })
    expect((await sandbox.commands.run('stat -c %U /root/made-by-root', { user: 'root' })).stdout).toBe(
      'root\n',
    )
    // Signed URLs name the user too: an upload as root lands in root's home.
    const uploadUrl = await sandbox.uploadUrl('signed.txt', { user: 'root', useSignatureExpiration: 10_000 })
    const form = new FormData()
    form.append('file', 'signed content')
    const uploaded = await fetch(uploadUrl, { method: 'POST', body: form })
    expect(await uploaded.json()).toEqual([{ name: 'signed.txt', path: '/root/signed.txt', type: 'file' }])
    const downloadUrl = await sandbox.downloadUrl('signed.txt', {
      user: 'root',
      useSignatureExpiration: 10_000,
    })
    expect(await (await fetch(downloadUrl)).text()).toBe('signed content')
    // The default user's relative paths stay in /home/user.
    const [own] = await sandbox.files.write([{ path: 'hello.txt', data: 'from user' }])
    expect(own?.path).toBe('/home/user/hello.txt')
  })

  it('gives `user` passwordless sudo: root in the same sandbox, exit status, stdin, env reset', async () => {
    const sandbox = await create()
    // E2B's own test: a command's envs do not reach the next command, with or without sudo.
    await sandbox.commands.run('echo $FOO', { envs: { FOO: 'bar' } })
    const scoped = await sandbox.commands.run('sudo echo "$FOO"')
    expect(scoped.exitCode).toBe(0)
    expect(scoped.stdout.trim()).toBe('')

    const identity = await sandbox.commands.run(
      'sudo sh -c \'id -u; echo "$HOME $USER $SUDO_USER $SUDO_UID"; pwd; grep CapEff /proc/self/status\'',
    )
    expect(identity.stdout).toBe('0\n/root root user 1000\n/home/user\nCapEff:\t00000000000000fb\n')
    expect((await sandbox.commands.run('sudo -u user id -u; sudo -i pwd')).stdout).toBe('1000\n/root\n')
    // The same sandbox: what sudo writes, the user's commands see, and the other way round.
    await sandbox.commands.run('echo secret > /tmp/from-user && sudo cp /tmp/from-user /root/copy')
    expect((await sandbox.commands.run('cat /root/copy', { user: 'root' })).stdout).toBe('secret\n')

    const failed = await sandbox.commands
      .run('sudo sh -c "echo out; echo err >&2; exit 3"')
      .catch((error) => error)
    expect(failed).toBeInstanceOf(CommandExitError)
    expect(failed).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' })
    expect((await sandbox.commands.run('printf "a\\nb\\n" | sudo wc -l')).stdout.trim()).toBe('2')
    // env_reset, as sudo does by default; -E keeps the caller's; VAR=value sets one.
    const env = await sandbox.commands.run(
      'export KEEP=1; sudo sh -c "echo [\\$KEEP]"; sudo -E sh -c "echo [\\$KEEP]"; sudo SET=2 sh -c "echo [\\$SET]"',
    )
    expect(env.stdout).toBe('[]\n[1]\n[2]\n')
    expect((await run(sandbox, 'sudo no-such-command')).exitCode).toBe(1)
  })

  it('a killed or interrupted sudo takes its command with it; signals reach the command', async () => {
    const sandbox = await create()
    const handle = await sandbox.commands.run('sudo sleep 321', { background: true })
    const running = async (command: string) => (await run(sandbox, `pgrep -xf '${command}'`)).exitCode === 0
    await waitUntil(() => running('sleep 321'))
    expect((await sandbox.commands.run("ps -o user= -p $(pgrep -xf 'sleep 321')")).stdout.trim()).toBe('root')
    await handle.kill()
    await waitUntil(async () => !(await running('sleep 321')))
    // SIGINT to sudo (Ctrl+C) is the command's SIGINT: sudo then ends as the command did.
    const interrupted = await run(sandbox, 'timeout -s INT 1 sudo sleep 30; echo "status $?"')
    expect(interrupted.stdout).toBe('status 124\n')
    expect(await running('sleep 30')).toBe(false)
    const terminated = await run(
      sandbox,
      'sudo sh -c \'trap "echo got TERM; exit 5" TERM; while :; do sleep 0.1; done\' & sleep 0.5; kill -TERM $!; wait $!; echo "status $?"',
    )
    expect(terminated.stdout).toBe('got TERM\nstatus 5\n')
  })

  it('sudo keeps working across a memory pause and after a cold boot', async () => {
    const sandbox = await create()
    expect((await sandbox.commands.run('sudo id -u')).stdout).toBe('0\n')
    await sandbox.pause()
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect((await resumed.commands.run('sudo id -u')).stdout).toBe('0\n')
    await resumed.pause({ keepMemory: false })
    const rebooted = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect((await rebooted.commands.run('sudo id -u')).stdout).toBe('0\n')
  })
})
