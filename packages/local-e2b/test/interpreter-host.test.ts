// The code interpreter as wired into the host: reached through the real @e2b/code-interpreter SDK on the same
// sandboxUrl, its kernels inside the sandbox (isolated, frozen by a pause, reset by a cold boot).
import { Sandbox } from '@e2b/code-interpreter'
import { describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'

describe('code interpreter through the host', () => {
  const t = useTestHost()
  const create = () => Sandbox.create({ ...t.opts, template: 'code-interpreter-v1' } as never)

  it('keeps state across cells, streams stdout, reports errors, runs javascript', async () => {
    const sandbox = await create()
    await sandbox.runCode('x = 41 + 1')
    expect((await sandbox.runCode('x')).text).toBe('42')
    const chunks: string[] = []
    const printed = await sandbox.runCode('print("hello")\nprint("world")', {
      onStdout: (message) => void chunks.push(message.line),
    })
    expect(chunks.join('')).toContain('hello')
    expect(printed.logs.stdout.join('')).toBe('hello\nworld\n')
    const failed = await sandbox.runCode('1 / 0')
    expect(failed.error?.name).toBe('ZeroDivisionError')
    expect(failed.error?.traceback).toBeTruthy()
    await sandbox.runCode('let counter = 1', { language: 'javascript' })
    expect((await sandbox.runCode('counter + 1', { language: 'javascript' })).text).toBe('2')
  })

  it('runs kernels inside the sandbox: its home, its files, no host paths', async () => {
    const sandbox = await create()
    await sandbox.files.write('/home/user/data.txt', 'from files api')
    const read = await sandbox.runCode(
      'import os\nprint(os.getcwd()); print(open("/home/user/data.txt").read()); print(os.path.exists("/work"))',
    )
    const out = read.logs.stdout.join('')
    if (t.host.isolation === 'bubblewrap') expect(out).toBe('/home/user\nfrom files api\nFalse\n')
    else expect(out).toContain('from files api')
  })

  it('a memory pause keeps the kernel state; a reboot loses it', async () => {
    const sandbox = await create()
    await sandbox.runCode('kept = 6 * 7')
    await sandbox.pause()
    const view = t.host.getSandbox(sandbox.sandboxId)
    expect(view?.frozen).toBe(true)
    const resumed = await Sandbox.connect(sandbox.sandboxId, t.opts)
    expect((await resumed.runCode('kept')).text).toBe('42')
    await resumed.pause()
    const rebooted = await Sandbox.connect(sandbox.sandboxId, { ...t.opts, onResume: 'reboot' } as never)
    expect((await rebooted.runCode('kept')).error?.name).toBe('NameError')
  })
})
