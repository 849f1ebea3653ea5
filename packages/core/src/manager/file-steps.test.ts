import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { JournalStep } from '../contract/journal.js'
import type { SandboxHandle } from '../contract/sandbox-provider.js'
import { filesToLeave } from './file-steps.js'

const sha = (text: string) => createHash('sha256').update(text).digest('hex')
const signal = new AbortController().signal

/** A sandbox that answers the digest command with `lines` (or fails it), and `exists` from `present`. */
function sandbox(answer: { lines?: string[]; present?: string[] }): SandboxHandle & { commands: string[] } {
  const commands: string[] = []
  return {
    commands,
    async runCommand(command: string) {
      commands.push(command)
      if (!answer.lines) return { exitCode: 127, stdout: '', stderr: 'no shell' }
      return { exitCode: 0, stdout: `${answer.lines.join('\n')}\n`, stderr: '' }
    },
    async exists(path: string) {
      return answer.present?.includes(path) ?? false
    },
  } as unknown as SandboxHandle & { commands: string[] }
}

const steps: JournalStep[] = [
  { kind: 'file', path: 'report.md', content: 'v1' },
  { kind: 'command', command: 'pip install rich' },
  { kind: 'file', path: 'report.md', content: 'v2' },
  { kind: 'file', path: 'same.txt', content: 'same' },
  { kind: 'file', path: 'new.txt', content: 'new' },
  { kind: 'code', code: 'x = 1' },
]

describe('filesToLeave', () => {
  it('writes what is missing, skips what is already there, keeps and names what differs', async () => {
    // One line per distinct path, in first-seen order: report.md, same.txt, new.txt.
    const box = sandbox({ lines: [sha('edited by hand'), sha('same'), 'missing'] })
    const files = await filesToLeave(box, steps, signal)
    expect(files.kept).toEqual(['report.md'])
    expect([...files.leave]).toEqual(['report.md', 'same.txt'])
    // One command looked at every path.
    expect(box.commands).toHaveLength(1)
    expect(box.commands[0]).toContain("'report.md' 'same.txt' 'new.txt'")
  })

  it('a file holding what the last step for it wrote needs no step and is not reported', async () => {
    const files = await filesToLeave(sandbox({ lines: [sha('v2'), 'missing', 'other'] }), steps, signal)
    expect(files.kept).toEqual(['new.txt'])
    expect([...files.leave]).toEqual(['report.md', 'new.txt'])
  })

  it('without a shell to compare with, keeps whatever is there and names it', async () => {
    const files = await filesToLeave(sandbox({ present: ['same.txt'] }), steps, signal)
    expect(files).toEqual({ leave: new Set(['same.txt']), kept: ['same.txt'] })
  })

  it('asks nothing of the sandbox when the steps write no file', async () => {
    const box = sandbox({})
    const code: JournalStep[] = [{ kind: 'code', code: 'x = 1' }]
    expect(await filesToLeave(box, code, signal)).toEqual({ leave: new Set(), kept: [] })
    expect(box.commands).toEqual([])
  })
})
