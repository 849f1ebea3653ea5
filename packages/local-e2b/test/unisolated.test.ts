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
    const home = t.host.getSandbox(sandbox.sandboxId)?.homeDir
    expect((await sandbox.commands.run('cat hello.txt; echo " $HOME"')).stdout).toBe(`hi ${home}\n`)
    const sleeper = await sandbox.commands.run('sleep 600', { background: true, timeoutMs: 0 })
    await sandbox.pause()
    expect(t.host.getSandbox(sandbox.sandboxId)?.frozen).toBe(true)
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect((await resumed.commands.list()).map((process) => process.pid)).toContain(sleeper.pid)
    await expect(resumed.files.read('/etc/passwd')).rejects.toMatchObject({ name: 'InvalidArgumentError' })
    await resumed.kill()
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
