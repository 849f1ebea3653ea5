import { z } from 'zod'
import type { ToolContext } from './context.js'
import type { ToolSandbox } from './tool-sandbox.js'
import type { PreviewUrlInput, PreviewUrlToolResult, SandboxToolSpecs } from './types.js'

/** The `previewUrl` tool: the address of a server the sandbox runs, for the user to open. */
export function previewUrlTool(context: ToolContext): SandboxToolSpecs['previewUrl'] {
  return {
    name: 'previewUrl',
    description:
      'Get the public URL of a web server running in the sandbox, to give to the user (a web app, an API, ' +
      'a dashboard). Start the server first with runCommand and background: true, listening on 0.0.0.0 ' +
      'and this port. The URL stays the same in later turns of this conversation.',
    inputSchema: z.object({
      port: z.number().int().min(1).max(65_535).describe('The port the server listens on in the sandbox.'),
      path: z.string().optional().describe("A path to open, e.g. '/docs'; default the root."),
    }),
    execute: (input, { abortSignal, sandbox: callSandbox } = {}) =>
      context.execute<PreviewUrlToolResult>(callSandbox, (sandbox) =>
        previewUrl(context, input, sandbox, abortSignal),
      ),
  }
}

async function previewUrl(
  { settings }: ToolContext,
  input: PreviewUrlInput,
  sandbox: ToolSandbox,
  abortSignal: AbortSignal | undefined,
): Promise<PreviewUrlToolResult> {
  const endpoint = await sandbox.portEndpoint(input.port, abortSignal)
  const base = endpoint.previewUrl ?? endpoint.url
  const path =
    input.path === undefined || input.path === ''
      ? ''
      : input.path.startsWith('/')
        ? input.path
        : `/${input.path}`
  // Probed from inside, as the health checks probe ports: bash's /dev/tcp, no curl needed in the template.
  // Tried every 0.1 s, because a server started a moment ago may not listen yet.
  const tries = Math.max(1, Math.ceil(settings.previewWaitMs / 100))
  const probe = await sandbox.runCommand(
    `for i in $(seq ${tries}); do (exec 3<>/dev/tcp/127.0.0.1/${input.port}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`,
    { timeoutMs: settings.timeoutMs, ...(abortSignal ? { abortSignal } : {}) },
  )
  const listening = probe.exitCode === 0
  return {
    url: `${base}${path}`,
    port: input.port,
    listening,
    note: listening
      ? 'A server answers on this port: give the user this URL. It keeps working in later turns while the ' +
        'server runs; a server lost with the sandbox comes back only through a health check with a repair.'
      : `Nothing listens on port ${input.port} inside the sandbox: start the server (runCommand with ` +
        'background: true, bound to 0.0.0.0) and call previewUrl again before giving the URL to the user.',
  }
}
