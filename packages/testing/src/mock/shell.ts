// The mock's very small shell: true/false/exit, echo, cat, and port probes (bash /dev/tcp) answered from the
// background processes that mention the port.
import type { CommandResult } from '@sandkeep/core/provider'
import type { MockSandbox } from './types.js'

const decoder = new TextDecoder()

export function miniShell(command: string, sandbox: MockSandbox, stdin?: string): CommandResult {
  const ok = (stdout = ''): CommandResult => ({ exitCode: 0, stdout, stderr: '' })
  const trimmed = command.trim()
  // Port probes (bash /dev/tcp): a port is open when a background process mentions it as its port.
  const port = /\/dev\/tcp\/127\.0\.0\.1\/(\d+)/.exec(trimmed)
  if (port) {
    const open = sandbox.processes.some((p) =>
      new RegExp(`(?:^|[^0-9])${port[1]}(?:[^0-9]|$)`).test(p.command),
    )
    if (!open) return { exitCode: 1, stdout: 'closed\n', stderr: '' }
    return ok(trimmed.includes('GET') ? 'status 200\n' : 'open\n')
  }
  if (trimmed === 'true' || trimmed === '') return ok()
  if (trimmed === 'false') return { exitCode: 1, stdout: '', stderr: '' }
  if (trimmed === 'cat' && stdin !== undefined) return ok(stdin)
  const exit = /^exit (\d+)$/.exec(trimmed)
  if (exit) return { exitCode: Number(exit[1]), stdout: '', stderr: '' }
  if (trimmed.startsWith('echo ')) return ok(`${unquoteShell(trimmed.slice(5))}\n`)
  if (trimmed.startsWith('cat ')) {
    const path = unquoteShell(trimmed.slice(4))
    const data = sandbox.files.get(path)
    if (!data) return { exitCode: 1, stdout: '', stderr: `cat: ${path}: No such file or directory\n` }
    return ok(decoder.decode(data))
  }
  return { exitCode: 127, stdout: '', stderr: `mock: command not understood: ${trimmed.slice(0, 80)}\n` }
}

function unquoteShell(text: string): string {
  const value = text.trim()
  if (value.length >= 2 && (value[0] === "'" || value[0] === '"') && value.at(-1) === value[0])
    return value.slice(1, -1)
  return value
}
