import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost } from './helpers.js'

describe('local-e2b first slice through the real e2b SDK', () => {
  const t = useTestHost()

  it('creates, runs a command, writes and reads a file, pauses, connects, kills', async () => {
    const sandbox = await Sandbox.create({ ...t.opts })
    const result = await sandbox.commands.run('echo hello from $HOME; pwd')
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toBe('hello from /home/user\n/home/user\n')
    await sandbox.files.write('/home/user/note.txt', 'kept')
    expect(await sandbox.files.read('note.txt')).toBe('kept')
    const info = await sandbox.getInfo()
    expect(info.state).toBe('running')
    expect(await sandbox.pause()).toBe(true)
    expect(t.host.getSandbox(sandbox.sandboxId)?.state).toBe('paused')
    const resumed = await Sandbox.connect(sandbox.sandboxId, { ...t.opts })
    expect((await resumed.getInfo()).state).toBe('running')
    expect(await resumed.files.read('/home/user/note.txt')).toBe('kept')
    expect(t.host.getSandbox(sandbox.sandboxId)?.pauseCount).toBe(1)
    expect(await resumed.kill()).toBe(true)
    expect(await Sandbox.kill(sandbox.sandboxId, { ...t.opts })).toBe(false)
  })
})
