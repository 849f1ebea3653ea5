// The agent both the test process and the resuming child build: same name, same tools, so a RunState written by
// one loads in the other. Code that mentions `approve-me` needs the user's approval.
import { setTracingDisabled } from '@openai/agents-core'
import { filesystem, SandboxAgent, shell } from '@openai/agents-core/sandbox'
import { codeInterpreter } from '@sandkeep/openai-agents'

// The SDK's default tracing exports spans to OpenAI; these runs have no key and need none.
setTracingDisabled(true)

/** @param {import('@openai/agents-core').Model} model */
export function buildAgent(model) {
  return new SandboxAgent({
    name: 'sandkeep-openai-agents-test',
    instructions: 'You run code in the sandbox.',
    model,
    capabilities: [
      filesystem(),
      shell(),
      codeInterpreter({ needsApproval: (code) => code.includes('approve-me') }),
    ],
    defaultManifest: { entries: { 'notes.txt': { type: 'file', content: 'from the manifest\n' } } },
  })
}
