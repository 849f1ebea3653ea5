// `@sandkeep/mastra`: a Mastra WorkspaceSandbox per thread, kept by a sandkeep session manager.
export { lostState, startOutcomeOf, stateLostNotice } from './notice.js'
export type { SandkeepMastraSandboxOptions } from './options.js'
export { SandkeepProcessManager } from './processes.js'
export { SandkeepMastraSandbox } from './sandbox.js'
export {
  createSandkeepSandboxes,
  type SandkeepSandboxes,
  type SandkeepSandboxesOptions,
  type ThreadContext,
  threadOf,
} from './sandboxes.js'
