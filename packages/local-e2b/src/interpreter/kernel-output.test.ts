// The kernels send a cell's output in bounded messages as it is produced: the host parses each message whole,
// so one 100 MB message used to hold its event loop for the whole parse. Each kernel runs here as a plain
// process speaking its protocol, read by the host's own frame reader.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createFrameReader, type KernelMessage } from './frames.js'

/** The kernels' bound: characters (python) or UTF-16 units (javascript) of one output message. */
const MESSAGE_CHARS = 64 * 1024

const KERNELS = fileURLToPath(new URL('../../kernels/', import.meta.url))

/** Runs one cell in a fresh kernel; resolves with every message up to the cell's `done`. */
function runCell(language: 'python' | 'javascript', code: string): Promise<KernelMessage[]> {
  const [command, script] =
    language === 'python'
      ? ['python3', `${KERNELS}python-kernel.py`]
      : [process.execPath, `${KERNELS}javascript-kernel.mjs`]
  const child = spawn(command, [script], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH },
  })
  const nonce = randomBytes(8).toString('hex')
  const messages: KernelMessage[] = []
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error('the cell did not end within 60 s'))
    }, 60_000)
    const reader = createFrameReader({
      nonce,
      onMessage: (message) => {
        messages.push(message)
        if (message.t === 'ready') child.stdin.write(`${JSON.stringify({ t: 'execute', id: 1, code })}\n`)
        if (message.t === 'done') {
          clearTimeout(timer)
          child.kill('SIGKILL')
          resolve(messages)
        }
      },
      onRaw: () => {},
    })
    child.stdout.on('data', (chunk: Buffer) => reader.push(chunk))
    child.once('error', reject)
    child.stdin.write(`${JSON.stringify({ t: 'hello', nonce })}\n`)
  })
}

function stdoutOf(messages: KernelMessage[]): string[] {
  return messages.filter((message) => message.t === 'stdout').map((message) => String(message.text))
}

describe('kernel output messages', () => {
  it('python: a 20 MB line, a 5 MB partial line and many small writes arrive whole, in bounded messages', async () => {
    const messages = await runCell(
      'python',
      [
        'import sys',
        "print('a' * 20_000_000)",
        "sys.stdout.write('b' * 5_000_000)",
        "sys.stdout.write('é' * 100_000 + '\\n')",
        "for i in range(1000): sys.stdout.write('c')",
        "print('end')",
      ].join('\n'),
    )
    const texts = stdoutOf(messages)
    expect(Math.max(...texts.map((text) => text.length))).toBeLessThanOrEqual(MESSAGE_CHARS)
    expect(texts.join('')).toBe(
      `${'a'.repeat(20_000_000)}\n${'b'.repeat(5_000_000)}${'é'.repeat(100_000)}\n${'c'.repeat(1000)}end\n`,
    )
    // Streamed as produced: the partial line's pieces went out before its newline was written.
    expect(texts.filter((text) => /^b+$/.test(text)).length).toBeGreaterThan(10)
  })

  it('javascript: a 20 MB console.log arrives whole in bounded messages, surrogate pairs kept together', async () => {
    const messages = await runCell(
      'javascript',
      "console.log('a'.repeat(20_000_000)); process.stdout.write('x' + '😀'.repeat(100_000) + '\\n')",
    )
    const texts = stdoutOf(messages)
    expect(Math.max(...texts.map((text) => text.length))).toBeLessThanOrEqual(MESSAGE_CHARS)
    expect(texts.join('')).toBe(`${'a'.repeat(20_000_000)}\nx${'😀'.repeat(100_000)}\n`)
    for (const text of texts) expect(text.isWellFormed()).toBe(true)
  })
})
