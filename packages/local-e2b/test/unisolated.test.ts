// The fallback without bubblewrap: processes run on the host with the sandbox directory as home, still
// frozen by a pause, still behind the same token and path checks. The host says so loudly.

import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'
import { expectOnlyOwnListeners } from './ports.js'

describe('isolation: none', () => {
  const warnings: string[] = []
  const t = useTestHost({ isolation: 'none', logger: (line) => void warnings.push(line) })

  it('warns, runs commands in the sandbox directory, pauses and resumes', async () => {
    expect(t.host.isolation).toBe('none')
    expect(warnings.join('\n')).toMatch(/UNISOLATED/)
    const sandbox = await Sandbox.create(t.opts)
    await sandbox.files.write('/home/user/hello.txt', 'hi')
    expect((await sandbox.commands.run('cat hello.txt; echo " $HOME"')).stdout).toBe('hi /home/user\n')
    const sleeper = await sandbox.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    await sandbox.pause()
    expect(t.host.getSandbox(sandbox.sandboxId)?.frozen).toBe(true)
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect((await resumed.commands.list()).map((process) => process.pid)).toContain(sleeper.pid)
    await expect(resumed.files.read('/etc/passwd')).rejects.toMatchObject({ name: 'InvalidArgumentError' })
    await resumed.kill()
  })

  it("the sandbox's directory is /home/user for files, commands and code alike (the SDK's absolute paths)", async () => {
    const sandbox = await CodeSandbox.create({ ...t.opts, template: 'code-interpreter-v1' } as never)
    try {
      await sandbox.files.write('/home/user/sales.csv', 'region,amount\nnorth,3\nsouth,4\n')
      const code = await sandbox.runCode(
        'import csv, os\nrows = list(csv.DictReader(open("/home/user/sales.csv")))\nprint(os.getcwd(), os.environ["HOME"])\nsum(int(r["amount"]) for r in rows)',
      )
      expect(code.error).toBeUndefined()
      expect(code.text).toBe('7')
      expect(code.logs.stdout.join('')).toBe('/home/user /home/user\n')
      const command = await sandbox.commands.run(
        'wc -l < /home/user/sales.csv; pwd; id -u; echo made > /home/user/by-command.txt',
      )
      expect(command.stdout).toBe('3\n/home/user\n1000\n')
      expect(await sandbox.files.read('/home/user/by-command.txt')).toBe('made\n')
      await sandbox.runCode('open("/home/user/by-code.txt", "w").write("from code")')
      expect(await sandbox.files.read('/home/user/by-code.txt')).toBe('from code')
      // The host's own files under /home/user (if it has such a user) are not the sandbox's.
      expect((await sandbox.commands.run('ls /home/user')).stdout.split('\n').filter(Boolean).sort()).toEqual(
        ['by-code.txt', 'by-command.txt', 'sales.csv'],
      )
      // The rest of the machine's /home is still there (a checkout under a developer's home keeps working).
      expect((await sandbox.runCode('import os; os.path.isdir("/home")')).text).toBe('True')
    } finally {
      await sandbox.kill()
    }
  })

  it('runs a pty with the host kernel directory', async () => {
    const sandbox = await Sandbox.create(t.opts)
    const chunks: Buffer[] = []
    const terminal = await sandbox.pty.create({
      cols: 70,
      rows: 20,
      onData: (data) => void chunks.push(Buffer.from(data)),
    })
    await sandbox.pty.sendInput(terminal.pid, new Uint8Array(Buffer.from('stty size; echo "pid=$$"\nexit\n')))
    expect((await terminal.wait()).exitCode).toBe(0)
    expect(Buffer.concat(chunks).toString()).toContain(`20 70\r\npid=${terminal.pid}\r\n`)
    await sandbox.kill()
  })

  it('runs the code interpreter with the host kernel directory', async () => {
    const sandbox = await CodeSandbox.create({ ...t.opts, template: 'code-interpreter-v1' } as never)
    await sandbox.runCode('x = 41 + 1')
    expect((await sandbox.runCode('x')).text).toBe('42')
    await sandbox.kill()
  })

  it("serves a sandbox's own port, but never one held by another program on the host's loopback", async () => {
    const sandbox = await Sandbox.create(t.opts)
    try {
      await expectOnlyOwnListeners(sandbox, t.host.port)
    } finally {
      await sandbox.kill()
    }
  }, 60_000)
})
