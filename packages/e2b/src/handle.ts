// The provider-neutral SandboxHandle over one SDK `Sandbox`; its capabilities live in commands.ts,
// code.ts and files.ts.
import type { Sandbox } from '@e2b/code-interpreter'
import type { SandboxHandle } from '@sandkeep/core'
import { runCode } from './code.js'
import { commandCapabilities } from './commands.js'
import type { ErrorContext } from './errors.js'
import type { ExecutingSandbox } from './execute.js'
import { fileCapabilities } from './files.js'
import type { OutputLimits } from './options.js'

export function handleFor(sandbox: ExecutingSandbox, limits: OutputLimits): SandboxHandle<Sandbox> {
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
  }
}
