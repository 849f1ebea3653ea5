// A sandbox capability the SDK's own capabilities lack: a persistent code interpreter, whose variables stay
// from one run of the conversation to the next because sandkeep pauses and resumes the same sandbox.
import { tool } from '@openai/agents-core'
import { Capability, type Manifest } from '@openai/agents-core/sandbox'
import type { CodeResult } from '@sandkeep/core'
import { unsupported } from './errors.js'
import { SandkeepSandboxSession } from './session.js'

/** Options of {@link codeInterpreter}. */
export interface CodeInterpreterOptions {
  /** Ask for the user's approval before each run (the run stops with an interruption). Default false. */
  needsApproval?: boolean
  /** The tool's name. Default `run_code`. */
  toolName?: string
}

class CodeInterpreterCapability extends Capability {
  readonly type = 'sandkeep_code'
  needsApproval: boolean
  toolName: string

  constructor(options: CodeInterpreterOptions) {
    super()
    this.needsApproval = options.needsApproval ?? false
    this.toolName = options.toolName ?? 'run_code'
  }

  #session(): SandkeepSandboxSession {
    if (!(this._session instanceof SandkeepSandboxSession)) {
      throw unsupported('codeInterpreter() needs a sandbox session from the sandkeep sandbox client.')
    }
    return this._session
  }

  override tools() {
    return [
      tool({
        name: this.toolName,
        description:
          'Runs Python in the sandbox’s persistent interpreter and returns the last expression’s value, stdout, stderr and any error. Variables persist across calls and across turns of this conversation.',
        parameters: {
          type: 'object',
          properties: { code: { type: 'string', description: 'Python source to run.' } },
          required: ['code'],
          additionalProperties: false,
        },
        strict: true,
        needsApproval: this.needsApproval,
        execute: async (input) => {
          const { code } = input as { code: string }
          return formatCodeResult(await this.#session().runCode(code))
        },
      }),
    ]
  }

  override instructions(_manifest: Manifest): string | null {
    const notice = this._session instanceof SandkeepSandboxSession ? this._session.notice : undefined
    const base = `Use \`${this.toolName}\` for Python: its interpreter keeps variables between calls and between turns.`
    return notice === undefined ? base : `${base}\n${notice} Tell the user before relying on earlier results.`
  }
}

/** The persistent code interpreter as a capability for a `SandboxAgent`'s `capabilities`. */
export function codeInterpreter(options: CodeInterpreterOptions = {}): Capability {
  return new CodeInterpreterCapability(options)
}

function formatCodeResult(result: CodeResult): string {
  return JSON.stringify({
    value: result.text,
    stdout: result.stdout,
    stderr: result.stderr,
    error: result.error ? `${result.error.name}: ${result.error.value}` : null,
  })
}
