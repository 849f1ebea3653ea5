// envd's pty processes: a Start with `pty` runs its command on a real terminal inside the sandbox. Node has no
// pty API, so a small helper (kernels/pty-helper.py) started through the sandbox's launcher opens the terminal,
// becomes the command (same pid, same namespaces and cgroups, so a pause freezes it with the rest) and forks a
// relay that copies the terminal's output to its stdout and applies the host's frames from its stdin: typed
// bytes (SendInput), the size (Update, TIOCSWINSZ) and signals (SendSignal: the command is in a session of its
// own, out of reach of the host's process-group signals).
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync } from 'node:fs'
import { posix } from 'node:path'
import { ConnectError } from './connect-protocol.js'
import { kernelHostDirectory } from './interpreter/index.js'
import type { PtySize, PtyTerminal } from './pty-terminal.js'
import { SANDBOX_KERNEL_DIR } from './runtime/namespace.js'
import type { ProcessConfig, Sandbox } from './sandbox.js'

export type { PtySize, PtyTerminal } from './pty-terminal.js'

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = { SIGKILL: 9, SIGTERM: 15 }

/** Largest value of a terminal dimension (the kernel's winsize fields are 16 bits). */
const MAX_CELLS = 0xffff

function readDimension(value: unknown, name: string): number {
  // proto3 JSON leaves out zero values.
  if (value === undefined || value === null) return 0
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_CELLS) {
    throw new ConnectError('invalid_argument', `pty.size.${name} must be an integer from 0 to ${MAX_CELLS}`)
  }
  return value
}

/** Reads a `PTY` message (`{ size: { cols, rows } }`). */
export function parsePtySize(value: unknown): PtySize {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConnectError('invalid_argument', 'pty must be an object')
  }
  const size = (value as { size?: unknown }).size ?? {}
  if (typeof size !== 'object' || size === null || Array.isArray(size)) {
    throw new ConnectError('invalid_argument', 'pty.size must be an object')
  }
  const { cols, rows } = size as { cols?: unknown; rows?: unknown }
  return { cols: readDimension(cols, 'cols'), rows: readDimension(rows, 'rows') }
}

/** The command line that runs `config` on a new terminal of `size` inside `sandbox`. */
export function ptyCommand(sandbox: Sandbox, config: ProcessConfig, size: PtySize): [string, string[]] {
  // The helper lies with the kernels: bound into an isolated sandbox, the package's own directory otherwise.
  const dir = sandbox.runtime.isolated ? SANDBOX_KERNEL_DIR : kernelHostDirectory()
  const python = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
  const helper = posix.join(dir, 'pty-helper.py')
  return [python, [helper, String(size.cols), String(size.rows), config.cmd, ...config.args]]
}

/** One frame of the helper's protocol: a type byte, a big-endian uint32 length, the payload. */
function frame(kind: 'i' | 'r' | 'k', payload: Buffer): Buffer {
  const header = Buffer.alloc(5)
  header.write(kind, 0, 'latin1')
  header.writeUInt32BE(payload.length, 1)
  return Buffer.concat([header, payload])
}

/** The terminal of a process started by {@link ptyCommand}; its frames go to the helper's stdin. */
export function createPtyTerminal(child: ChildProcessWithoutNullStreams): PtyTerminal {
  const control = child.stdin
  const open = () => !control.destroyed && !control.writableEnded
  return {
    type(data) {
      if (open() && data.length > 0) control.write(frame('i', data))
    },
    resize({ cols, rows }) {
      const payload = Buffer.alloc(4)
      payload.writeUInt16BE(cols, 0)
      payload.writeUInt16BE(rows, 2)
      if (open()) control.write(frame('r', payload))
    },
    signal(signal) {
      const number = SIGNAL_NUMBERS[signal]
      if (number === undefined || !open()) return false
      control.write(frame('k', Buffer.from([number])))
      return true
    },
  }
}
