// A mock sandbox's handle: commands and processes, code (with the fidelity probe), and files. A handle is
// bound to the id it was made for: after a re-map the old id is gone, as on E2B.

import { SandkeepError } from '@sandkeep/core'
import {
  checkMaxBytes,
  type FileEntry,
  readLimitError,
  type SandboxHandle,
  validatePort,
} from '@sandkeep/core/provider'
import { miniInterpreter } from './interpreter.js'
import type { MockPlatform } from './platform.js'
import { carriedProbeOf, probeOf, runCarriedCommand, runCarriedProbe, runProbe } from './probes.js'
import { miniShell } from './shell.js'
import type { MockOperation, MockSandbox } from './types.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Records `operation` on the handle's id and returns the sandbox, which must be running. */
type Enter = (operation: MockOperation, detail?: string) => Promise<MockSandbox>

type Handle = SandboxHandle<MockSandbox>

function processOps(
  platform: MockPlatform,
  op: Enter,
): Pick<Handle, 'runCommand' | 'startProcess' | 'listProcesses' | 'killProcess'> {
  const { options } = platform
  return {
    async runCommand(command, commandOptions) {
      const target = await op('runCommand', command)
      const shell = (script: string) =>
        options.onCommand?.(script, target) ?? miniShell(script, target, commandOptions?.stdin)
      // A command whose first line tests the marker (fidelity-carried-command.ts): the rest is the user's.
      const carried = carriedProbeOf(command, 'python:default')
      const result = carried ? runCarriedCommand(carried, target, options, shell) : shell(command)
      if (result.stdout) commandOptions?.onStdout?.(result.stdout)
      if (result.stderr) commandOptions?.onStderr?.(result.stderr)
      return result
    },
    async startProcess(command, processOptions) {
      const target = await op('startProcess', command)
      const pid = platform.nextPid()
      target.processes.push({ pid, command, ...(processOptions?.cwd ? { cwd: processOptions.cwd } : {}) })
      return { pid }
    },
    async listProcesses() {
      const target = await op('listProcesses')
      return target.processes.map((p) => ({ ...p }))
    },
    async killProcess(pid) {
      const target = await op('killProcess', String(pid))
      const index = target.processes.findIndex((p) => p.pid === pid)
      if (index < 0) return false
      target.processes.splice(index, 1)
      return true
    },
  }
}

function codeOp(platform: MockPlatform, op: Enter): Handle['runCode'] {
  const { options } = platform
  return async (code, codeOptions) => {
    const target = await op('runCode', code)
    const language = codeOptions?.language ?? 'python'
    const contextKey = `${language}:${codeOptions?.contextId ?? 'default'}`
    let globals = target.memory.get(contextKey)
    if (!globals) {
      globals = new Map()
      target.memory.set(contextKey, globals)
    }
    const cell = (source: string) => {
      const custom = options.onCode?.(source, language, target)
      if (custom) return custom
      const probe = probeOf(source, contextKey)
      return probe ? runProbe(probe, target, options) : miniInterpreter(source, language, globals)
    }
    // A cell carrying the probes on its first line: the rest is the user's cell, as the hook sees it.
    const carried = carriedProbeOf(code, contextKey)
    const result = carried ? runCarriedProbe(carried, target, options, cell) : cell(code)
    // Streamed like a real cell, so code under test that watches output sees it.
    if (result.stdout) codeOptions?.onStdout?.(result.stdout)
    if (result.stderr) codeOptions?.onStderr?.(result.stderr)
    return result
  }
}

function missing(path: string, sandboxId: string): SandkeepError {
  return new SandkeepError({
    code: 'FILE_NOT_FOUND',
    message: `${path} does not exist in the mock sandbox.`,
    sandboxId,
  })
}

const under = (path: string) => (path.endsWith('/') ? path : `${path}/`)

function listEntries(files: Map<string, Uint8Array>, path: string, depth: number): FileEntry[] {
  const prefix = under(path)
  const entries = new Map<string, FileEntry>()
  for (const [file, data] of files) {
    if (!file.startsWith(prefix)) continue
    const parts = file.slice(prefix.length).split('/')
    for (let i = 0; i < Math.min(depth, parts.length); i++) {
      const entryPath = prefix + parts.slice(0, i + 1).join('/')
      const isFile = i === parts.length - 1
      entries.set(entryPath, {
        name: parts[i] ?? '',
        path: entryPath,
        type: isFile ? 'file' : 'dir',
        ...(isFile ? { size: data.byteLength } : {}),
      })
    }
  }
  return [...entries.values()]
}

function fileOps(
  sandbox: MockSandbox,
  op: Enter,
): Pick<Handle, 'readFile' | 'writeFile' | 'listDir' | 'exists' | 'remove'> {
  return {
    readFile: (async (path: string, readOptions?: { format?: 'text' | 'bytes'; maxBytes?: number }) => {
      const maxBytes = checkMaxBytes(readOptions?.maxBytes)
      const target = await op('readFile', path)
      const data = target.files.get(path)
      if (!data) throw missing(path, sandbox.id)
      if (maxBytes !== undefined && data.byteLength > maxBytes)
        throw readLimitError(path, maxBytes, sandbox.id)
      return readOptions?.format === 'bytes' ? data.slice() : decoder.decode(data)
    }) as Handle['readFile'],
    async writeFile(path, data) {
      const target = await op('writeFile', path)
      target.files.set(path, typeof data === 'string' ? encoder.encode(data) : data.slice())
    },
    async listDir(path, listOptions) {
      const target = await op('listDir', path)
      const entries = listEntries(target.files, path, listOptions?.depth ?? 1)
      if (entries.length === 0 && ![...target.files.keys()].some((f) => f.startsWith(under(path)))) {
        throw missing(path, sandbox.id)
      }
      return entries
    },
    async exists(path) {
      const target = await op('exists', path)
      const prefix = under(path)
      return target.files.has(path) || [...target.files.keys()].some((f) => f.startsWith(prefix))
    },
    async remove(path) {
      const target = await op('remove', path)
      const prefix = under(path)
      for (const file of [...target.files.keys()]) {
        if (file === path || file.startsWith(prefix)) target.files.delete(file)
      }
    },
  }
}

/** The handle of `sandbox` under its current id. */
export function handleFor(platform: MockPlatform, sandbox: MockSandbox): Handle {
  const id = sandbox.id
  const op: Enter = async (operation, detail) => {
    await platform.enter(operation, id, detail)
    return platform.running(id)
  }
  const handle: Handle = {
    id,
    providerId: platform.providerId,
    native: sandbox,
    ...processOps(platform, op),
    runCode: codeOp(platform, op),
    ...fileOps(sandbox, op),
  }
  if (!platform.options.without?.includes('portEndpoint')) {
    // A name under `.invalid` (RFC 2606): shaped like E2B's port hosts, and never resolves to anything.
    handle.portEndpoint = (port, options) => {
      const url = `${options?.protocol === 'ws' ? 'ws' : 'http'}://${validatePort(port)}-${id}.mock.invalid`
      return { url, headers: {}, previewUrl: url }
    }
  }
  return handle
}
