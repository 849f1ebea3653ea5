// sandbox.pty through the unmodified e2b SDK: a real terminal inside the sandbox (its line discipline, its size,
// raw bytes both ways), in the sandbox's pid namespace and cgroup, frozen with it on pause.
import { Sandbox } from 'e2b'
import { describe, expect, it } from 'vitest'
import { useTestHost, waitUntil } from './helpers.js'

/** Collects a terminal's output bytes; `text()` decodes what came so far. */
function collector() {
  const chunks: Buffer[] = []
  return {
    onData: (data: Uint8Array) => void chunks.push(Buffer.from(data)),
    bytes: () => Buffer.concat(chunks),
    text: () => Buffer.concat(chunks).toString('utf8'),
  }
}

const typed = (text: string) => new Uint8Array(Buffer.from(text))

describe('pty', () => {
  const t = useTestHost()
  /** Runs `run` with a new sandbox, killed afterwards. */
  const inSandbox = async (run: (sandbox: Sandbox) => Promise<void>) => {
    const sandbox = await Sandbox.create({ ...t.opts })
    try {
      await run(sandbox)
    } finally {
      await sandbox.kill()
    }
  }

  it('create: bash on a terminal of the asked size, with the envs, typed into; exit ends it with its code', async () => {
    await inSandbox(async (sandbox) => {
      const output = collector()
      const terminal = await sandbox.pty.create({ cols: 91, rows: 27, envs: { ABC: 'v-123' }, ...output })
      const listed = (await sandbox.commands.list()).find((process) => process.pid === terminal.pid)
      expect(listed).toMatchObject({ cmd: '/bin/bash', args: ['-i', '-l'] })
      await sandbox.pty.sendInput(terminal.pid, typed('echo "[$ABC] [$TERM] [$$]"; tty; stty size\n'))
      await waitUntil(() => /\d+ \d+\r\n/.test(output.text()))
      expect(output.text()).toContain(`[v-123] [xterm-256color] [${terminal.pid}]`)
      expect(output.text()).toMatch(/\/dev\/pts\/\d+\r\n27 91\r\n/)
      await sandbox.pty.sendInput(terminal.pid, typed('exit 7\n'))
      const ended = await terminal.wait().catch((error: { exitCode?: number }) => error)
      expect(ended.exitCode).toBe(7)
      expect(terminal.exitCode).toBe(7)
    })
  })

  it('resize reaches the terminal: stty and tput see the new size, a running program gets SIGWINCH', async () => {
    await inSandbox(async (sandbox) => {
      const output = collector()
      const terminal = await sandbox.pty.create({ cols: 80, rows: 24, ...output })
      const watcher = [
        'import os, signal',
        "signal.signal(signal.SIGWINCH, lambda *_: print('winch', *os.get_terminal_size(), flush=True))",
        "print('watching', flush=True)",
        'signal.pause()',
      ].join('; ')
      await sandbox.pty.sendInput(terminal.pid, typed(`python3 -c "${watcher}"\n`))
      await waitUntil(() => output.text().includes('watching\r\n'))
      await sandbox.pty.resize(terminal.pid, { cols: 132, rows: 43 })
      await waitUntil(() => output.text().includes('winch 132 43'))
      await sandbox.pty.sendInput(terminal.pid, typed('tput cols; stty size\nexit\n'))
      await terminal.wait()
      expect(output.text()).toMatch(/132\r\n43 132\r\n/)
    })
  })

  it('input and output are bytes, through the line discipline: Ctrl+C interrupts, raw bytes arrive unchanged', async () => {
    await inSandbox(async (sandbox) => {
      const output = collector()
      const terminal = await sandbox.pty.create({ cols: 80, rows: 24, ...output })
      // The terminal echoes what is typed: the marker the shell would print is computed, never typed.
      await sandbox.pty.sendInput(terminal.pid, typed('sleep 600; echo "fin$((6 * 7))"\n'))
      // Only once sleep is the terminal's foreground job (a `+` in its state) does the terminal's SIGINT reach
      // it; a Ctrl+C typed between bash's fork and its tcsetpgrp goes to bash, which ignores it.
      await waitUntil(async () =>
        (await sandbox.commands.run('ps -o stat= -C sleep || true')).stdout.includes('+'),
      )
      // ETX (Ctrl+C) becomes SIGINT for the terminal's foreground job.
      await sandbox.pty.sendInput(terminal.pid, new Uint8Array([0x03]))
      await sandbox.pty.sendInput(terminal.pid, typed("printf 'raw:\\377\\376\\n'\n"))
      await waitUntil(() => output.bytes().includes(Buffer.from([0x72, 0x61, 0x77, 0x3a, 0xff, 0xfe])))
      expect(output.text()).toContain('^C')
      expect(output.text()).not.toContain('fin42')
      await sandbox.pty.sendInput(terminal.pid, typed('exit\n'))
      expect((await terminal.wait()).exitCode).toBe(0)
    })
  })

  it('kill ends the terminal process at once; an unknown pid gives false', async () => {
    await inSandbox(async (sandbox) => {
      const terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: () => {} })
      expect(await sandbox.pty.kill(terminal.pid)).toBe(true)
      const ended = await terminal.wait().catch((error: { exitCode?: number; error?: string }) => error)
      expect(ended).toMatchObject({ exitCode: -1, error: 'signal: killed' })
      // No longer running, not even as a zombie.
      await expect(sandbox.commands.run(`kill -0 ${terminal.pid}`)).rejects.toMatchObject({ exitCode: 1 })
      expect(await sandbox.pty.kill(999_999)).toBe(false)
    })
  })

  it('connect after a disconnect gets the output from then on and the exit code, on the same pid', async () => {
    await inSandbox(async (sandbox) => {
      const first = collector()
      const terminal = await sandbox.pty.create({ cols: 80, rows: 24, envs: { FOO: 'one' }, ...first })
      await sandbox.pty.sendInput(terminal.pid, typed('echo "got-$FOO"\n'))
      await waitUntil(() => first.text().includes('got-one\r\n'))
      await terminal.disconnect()
      const second = collector()
      const again = await sandbox.pty.connect(terminal.pid, second)
      expect(again.pid).toBe(terminal.pid)
      await sandbox.pty.sendInput(terminal.pid, typed('FOO=two; echo "got-$FOO"\nexit 0\n'))
      expect((await again.wait()).exitCode).toBe(0)
      expect(second.text()).toContain('got-two\r\n')
      expect(second.text()).not.toContain('got-one')
    })
  })

  it("runs in the sandbox's namespaces and cgroup: same pid namespace as commands, frozen by a pause", async () => {
    await inSandbox(async (sandbox) => {
      const output = collector()
      const terminal = await sandbox.pty.create({ cols: 80, rows: 24, timeoutMs: 0, ...output })
      const namespace = (await sandbox.commands.run('readlink /proc/self/ns/pid')).stdout.trim()
      await sandbox.pty.sendInput(terminal.pid, typed('echo "ns=$(readlink /proc/self/ns/pid)"\n'))
      await waitUntil(() => output.text().includes(`ns=${namespace}\r\n`))
      await sandbox.pty.sendInput(terminal.pid, typed('while :; do echo tick; sleep 0.05; done\n'))
      await waitUntil(() => output.text().split('tick\r\n').length > 3)
      await sandbox.pause()
      expect(t.host.getSandbox(sandbox.sandboxId)?.frozen).toBe(true)
      await new Promise((resolve) => setTimeout(resolve, 150))
      const whilePaused = output.bytes().length
      await new Promise((resolve) => setTimeout(resolve, 400))
      expect(output.bytes().length).toBe(whilePaused)
      const resumed = await Sandbox.connect(sandbox.sandboxId, { ...t.opts })
      await waitUntil(() => output.bytes().length > whilePaused)
      expect(await resumed.pty.kill(terminal.pid)).toBe(true)
    })
  })

  it('stdin and pty input are kept apart, as envd keeps them', async () => {
    await inSandbox(async (sandbox) => {
      const terminal = await sandbox.pty.create({ cols: 80, rows: 24, onData: () => {} })
      await expect(sandbox.commands.sendStdin(terminal.pid, 'x')).rejects.toThrow(/terminal/)
      await expect(sandbox.commands.closeStdin(terminal.pid)).rejects.toThrow(/Ctrl\+D/)
      const piped = await sandbox.commands.run('cat', { background: true, stdin: true })
      await expect(sandbox.pty.sendInput(piped.pid, typed('x'))).rejects.toThrow(/no terminal/)
      await expect(sandbox.pty.resize(piped.pid, { cols: 10, rows: 10 })).rejects.toThrow(/no terminal/)
      await sandbox.pty.kill(terminal.pid)
      await piped.kill()
    })
  })
})
