// `@sandkeep/openai-agents`: the OpenAI Agents SDK's sandbox client on a sandkeep session manager.
export {
  createSandkeepSandboxClient,
  SANDKEEP_BACKEND_ID,
  type SandkeepSandboxClient,
} from './client.js'
export { type CodeInterpreterOptions, codeInterpreter } from './code-capability.js'
export { stateLostNotice } from './notice.js'
export type { SandkeepRunOptions, SandkeepSandboxClientOptions } from './options.js'
export { type SandkeepDeleteOptions, SandkeepSandboxSession, type SandkeepSessionState } from './session.js'
