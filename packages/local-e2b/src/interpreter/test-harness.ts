// A code interpreter served on a loopback port with kernels spawned as plain host processes, driven by the
// real @e2b/code-interpreter SDK: the harness of the interpreter's unit tests (kernels.test.ts,
// interpreter.test.ts).
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Sandbox } from '@e2b/code-interpreter'
import { createCodeInterpreter, kernelHostDirectory } from './index.js'
import type { CodeInterpreter, KernelSpawner } from './types.js'

export interface Harness {
  url: string
  interpreter: CodeInterpreter
  sandbox: Sandbox
  events: { type: string; detail: Record<string, unknown> }[]
  children: ChildProcessWithoutNullStreams[]
  home: string
  close(): Promise<void>
}

const harnesses: Harness[] = []

export async function startHarness(envs: Record<string, string> = {}): Promise<Harness> {
  const home = mkdtempSync(join(tmpdir(), 'sandkeep-interpreter-'))
  const children: ChildProcessWithoutNullStreams[] = []
  const spawner: KernelSpawner = {
    spawn(command, args, options) {
      const child = spawn(command, args, {
        cwd: options.cwd,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', ...options.env },
        stdio: 'pipe',
      })
      children.push(child)
      return child
    },
  }
  const events: Harness['events'] = []
  const interpreter = createCodeInterpreter({
    sandboxId: 'test-sandbox',
    spawner,
    kernelDir: kernelHostDirectory(),
    homeDir: home,
    envs,
    emit: (type, detail) => events.push({ type, detail }),
  })
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      void interpreter.handle(request, response, Buffer.concat(chunks))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (typeof address !== 'object' || address === null) throw new Error('no address')
  const url = `http://127.0.0.1:${address.port}`
  const sandbox = await Sandbox.create({ debug: true, sandboxUrl: url, apiKey: 'unit-test' })
  const harness: Harness = {
    url,
    interpreter,
    sandbox,
    events,
    children,
    home,
    async close() {
      await interpreter.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      rmSync(home, { recursive: true, force: true })
    },
  }
  harnesses.push(harness)
  return harness
}

export const running = (child: ChildProcessWithoutNullStreams) =>
  child.exitCode === null && child.signalCode === null

/** Closes one harness now (it is then not closed again by {@link closeHarnesses}). */
export async function stopHarness(harness: Harness): Promise<void> {
  const index = harnesses.indexOf(harness)
  if (index >= 0) harnesses.splice(index, 1)
  await harness.close()
}

/** Closes every harness started so far (the test files' afterAll). */
export async function closeHarnesses(): Promise<void> {
  await Promise.all(harnesses.splice(0).map((harness) => harness.close()))
}
