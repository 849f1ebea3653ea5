// The sandbox tools as a HarnessAgent's `tools` take them. @ai-sdk/harness 1.0.122 pins ai 7.0.112, so an
// app on a newer ai has two copies of @ai-sdk/provider-utils, each branding its schemas with a symbol of its
// own: a tool made with the newer `tool()` is then no member of the harness's ToolSet, although the harness
// runs it unchanged (it reads the zod schema and calls execute). Only the type is converted here.
import type { HarnessV1 } from '@ai-sdk/harness'
import { type SandboxToolsOptions, sandboxTools } from '../sandbox-tools.js'

/** A tool set as the harness's copy of the AI SDK types it. */
export type HarnessToolSet = HarnessV1['builtinTools']

/**
 * {@link sandboxTools} for `new HarnessAgent({ tools })`: the same tools, which use the restricted view of the
 * harness's sandbox (a sandkeep session) the agent passes them as `experimental_sandbox`.
 * @throws SandkeepError INVALID_ARGUMENT for bad options.
 */
export function harnessSandboxTools(options: SandboxToolsOptions = {}): HarnessToolSet {
  return sandboxTools(options) as unknown as HarnessToolSet
}
