// The provider-neutral SandboxHandle over one SDK `Sandbox`; its capabilities live in commands.ts,
// code.ts, files.ts and ports.ts.
import type { Sandbox } from '@e2b/code-interpreter'
import type { SandboxHandle } from '@sandkeep/core/provider'
import { runCode } from './code.js'
import { commandCapabilities } from './commands.js'
import type { ErrorContext } from './errors.js'
import type { ExecutingSandbox } from './execute.js'
import { fileCapabilities } from './files.js'
import type { Connection, OutputLimits } from './options.js'
import { portEndpointOf } from './ports.js'

export function handleFor(
  sandbox: ExecutingSandbox,
  limits: OutputLimits,
  connection: Connection,
): SandboxHandle<Sandbox> {
  const sandboxId = sandbox.sandboxId
  const at = (operation: string, path?: string): ErrorContext => ({
    operation,
    sandboxId,
    ...(path !== undefined ? { path } : {}),
  })
  return {
    id: sandboxId,
    providerId: 'e2b',
    native: sandbox,
    ...commandCapabilities(sandbox, at, limits),
    runCode: (code, options = {}) => runCode(sandbox, at, code, options, limits),
    ...fileCapabilities(sandbox, at),
    portEndpoint: portEndpointOf(sandbox, connection),
  }
}
