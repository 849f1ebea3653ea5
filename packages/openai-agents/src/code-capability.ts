// A sandbox capability the SDK's own capabilities lack: a persistent code interpreter, whose variables stay
// from one run of the conversation to the next because sandkeep pauses and resumes the same sandbox.
import { tool } from '@openai/agents-core'
import { Capability, type Manifest } from '@openai/agents-core/sandbox'
import { truncateOutput } from '@sandkeep/agent'
import type { CodeResult } from '@sandkeep/core'
import { invalid, unsupported } from './errors.js'
import { SandkeepSandboxSession } from './session.js'

/** Options of {@link codeInterpreter}. */
export interface CodeInterpreterOptions {
  /**
   * Ask for the user's approval before a run of code (the run stops with an interruption): `true` for every
   * call, or a function of the code that says which. Default false.
   */
  needsApproval?: boolean | ((code: string) => boolean | Promise<boolean>)
  /** The tool's name. Default `run_code`. */
  toolName?: string
  /**
   * Largest value, stdout and stderr shown to the model, per part, in characters; the rest is cut with a
   * note (@sandkeep/agent's output shaping). Default 8 000, as @sandkeep/agent's tools.
   */
  maxOutputChars?: number
}

/** @sandkeep/agent's default limit of one output part shown to the model. */
const DEFAULT_MAX_OUTPUT_CHARS = 8_000

class CodeInterpreterCapability extends Capability {
  readonly type = 'sandkeep_code'
  needsApproval: boolean | ((code: string) => boolean | Promise<boolean>)
  toolName: string
  maxOutputChars: number

  constructor(options: CodeInterpreterOptions) {
    super()
    this.needsApproval = options.needsApproval ?? false
    this.toolName = options.toolName ?? 'run_code'
    this.maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS
  }

  // Not a #private method: the SDK clones capabilities with Object.create, which private members do not survive.
  protected boundSession(): SandkeepSandboxSession {
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
        needsApproval: approvalPolicy(this.needsApproval),
        execute: async (input) => {
          const result = await this.boundSession().runCode(readCode(input))
          return formatCodeResult(result, this.maxOutputChars)
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
  const max = options.maxOutputChars
  if (max !== undefined && (typeof max !== 'number' || !Number.isFinite(max) || max <= 0)) {
    throw invalid(`codeInterpreter: maxOutputChars must be a positive number, got ${String(max)}.`)
  }
  return new CodeInterpreterCapability(options)
}

function approvalPolicy(
  needsApproval: boolean | ((code: string) => boolean | Promise<boolean>),
): boolean | ((context: unknown, input: unknown) => Promise<boolean>) {
  if (typeof needsApproval === 'boolean') return needsApproval
  return async (_context, input) => await needsApproval(readCode(input))
}

// The SDK hands a JSON-schema tool its arguments as the model wrote them (a JSON string) in some paths and
// parsed in others.
function readCode(input: unknown): string {
  const args = typeof input === 'string' ? (JSON.parse(input) as unknown) : input
  const code = (args as { code?: unknown } | null)?.code
  if (typeof code !== 'string') throw invalid('run_code takes { code: string }.')
  return code
}

/** The cell's result as JSON for the model, each part cut past `maxChars` with a note. */
export function formatCodeResult(result: CodeResult, maxChars: number): string {
  const cut = (text: string) => truncateOutput(text, maxChars).text
  return JSON.stringify({
    value: result.text === null ? null : cut(result.text),
    stdout: cut(result.stdout),
    stderr: cut(result.stderr),
    error: result.error ? cut(`${result.error.name}: ${result.error.value}`) : null,
  })
}
