// The file tools: readFile (size checked first), writeFile (recordable as a setup step), listFiles.
import { SandkeepError } from '@sandkeep/core'
import { z } from 'zod'
import type { ToolContext } from './context.js'
import { recordStep } from './execute.js'
import { shapeFileContent, shapeListing } from './model-output.js'
import { setupField } from './setup-field.js'
import type { ToolSandbox } from './tool-sandbox.js'
import type {
  ListFilesToolResult,
  ReadFileInput,
  ReadFileToolResult,
  SandboxToolSpecs,
  WriteFileToolResult,
} from './types.js'

const pathField = z.string().min(1).describe('Path; relative paths start at the sandbox home.')

export function readFileTool(context: ToolContext): SandboxToolSpecs['readFile'] {
  return {
    name: 'readFile',
    description:
      'Read a text file from the sandbox, optionally only lines startLine..endLine (1-based, inclusive). ' +
      'Long content is cut with a note; read a line range to see more.',
    inputSchema: z.object({
      path: pathField,
      startLine: z.number().int().min(1).optional(),
      endLine: z.number().int().min(1).optional(),
    }),
    execute: (input, { abortSignal, sandbox: callSandbox } = {}) =>
      context.execute<ReadFileToolResult>(callSandbox, (sandbox) =>
        readFile(context, input, sandbox, abortSignal),
      ),
  }
}

async function readFile(
  { settings }: ToolContext,
  input: ReadFileInput,
  sandbox: ToolSandbox,
  abortSignal: AbortSignal | undefined,
): Promise<ReadFileToolResult> {
  const path = sandbox.resolvePath(input.path)
  // The size first, for a clear answer without reading; the read itself is bounded too, since the file can
  // grow or be swapped between the two.
  const info = await sandbox.stat(path, abortSignal)
  if (info === null) {
    throw new SandkeepError({ code: 'FILE_NOT_FOUND', message: `No such file: ${path}` })
  }
  if (info.type === 'directory') {
    throw new SandkeepError({ code: 'INVALID_ARGUMENT', message: `${path} is a directory: use listFiles.` })
  }
  if (info.size > settings.maxReadBytes) {
    throw new SandkeepError({
      code: 'INVALID_ARGUMENT',
      message:
        `${path} is ${info.size} bytes, over the ${settings.maxReadBytes}-byte read limit: inspect it with ` +
        'runCommand (head, tail, grep, sed -n) instead.',
    })
  }
  const text = await sandbox.readText(path, settings.maxReadBytes, abortSignal)
  if (text === null) {
    throw new SandkeepError({ code: 'FILE_NOT_FOUND', message: `No such file: ${path}` })
  }
  return shapeFileContent(path, text, input.startLine, input.endLine, settings.maxFileChars)
}

export function writeFileTool(context: ToolContext): SandboxToolSpecs['writeFile'] {
  return {
    name: 'writeFile',
    description:
      'Write a text file in the sandbox (UTF-8), replacing it if it exists and creating parent directories.',
    inputSchema: z.object({
      path: pathField,
      content: z.string().describe('The whole new content of the file.'),
      setup: setupField,
    }),
    execute: (input, { abortSignal, sandbox: callSandbox } = {}) =>
      context.execute<WriteFileToolResult>(callSandbox, async (sandbox) => {
        const path = sandbox.resolvePath(input.path)
        await sandbox.writeText(path, input.content, abortSignal)
        const shaped: WriteFileToolResult = { path, bytes: Buffer.byteLength(input.content) }
        if (context.wantsRecord(input.setup)) {
          const note = await recordStep(sandbox, { kind: 'file', path, content: input.content })
          if (note) shaped.notice = note
        }
        return shaped
      }),
  }
}

export function listFilesTool(context: ToolContext): SandboxToolSpecs['listFiles'] {
  return {
    name: 'listFiles',
    description: 'List the files and directories under a path in the sandbox.',
    inputSchema: z.object({
      path: z.string().optional().describe('Directory; default the sandbox home.'),
      depth: z.number().int().min(1).max(5).optional().describe('How deep to descend; default 1.'),
    }),
    execute: (input, { abortSignal, sandbox: callSandbox } = {}) =>
      context.execute<ListFilesToolResult>(callSandbox, async (sandbox) => {
        const path = sandbox.resolvePath(input.path ?? '.')
        const entries = await sandbox.list(path, input.depth ?? 1, abortSignal)
        if (entries === null) {
          throw new SandkeepError({ code: 'FILE_NOT_FOUND', message: `No such directory: ${path}` })
        }
        return shapeListing(path, entries, context.settings.maxListEntries)
      }),
  }
}
