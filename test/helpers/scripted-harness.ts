// A harness adapter (`HarnessV1`) for tests, with a scripted model in place of a coding-agent runtime: no
// LLM, no CLI in the sandbox, no bridge. Each turn of the script is a list of host-tool calls, one step
// each, each able to read the results before it, then a text made from the results. HarnessAgent drives it
// exactly as it drives Claude Code or Codex: it starts a session with a network sandbox session from the
// provider, runs the host tools the adapter calls (with the sandbox's restricted view as
// `experimental_sandbox`) and submits their results back. The published package ships no adapter that runs
// offline (every adapter drives a real runtime through a bridge), hence this one.
import type {
  HarnessV1,
  HarnessV1Bootstrap,
  HarnessV1PromptControl,
  HarnessV1ResumeSessionState,
  HarnessV1Session,
  HarnessV1StartOptions,
  HarnessV1StreamPart,
} from '@ai-sdk/harness'

/** One tool call the scripted model makes, given the results of the turn's earlier calls. */
export type ScriptedStep = (results: unknown[]) => { toolName: string; input: Record<string, unknown> }

/** One turn of the script. */
export interface ScriptedTurn {
  steps: ScriptedStep[]
  text: (results: unknown[]) => string
}

/** What the adapter saw, for assertions. */
export interface ScriptedHarnessLog {
  /** Every doStart: fresh or resumed, and the session's work directory. */
  starts: Array<{ sessionId: string; resumed: boolean; sessionWorkDir: string }>
  /** Every prompt, in order. */
  prompts: string[]
}

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
}

/**
 * The adapter; `script` picks the turn for each prompt (by its text). `bootstrap` is the recipe it asks the
 * agent to set up once per sandbox, as a bridge-backed adapter ships its bridge.
 */
export function createScriptedHarness(
  script: (prompt: string) => ScriptedTurn,
  bootstrap?: HarnessV1Bootstrap,
): HarnessV1 & { readonly log: ScriptedHarnessLog } {
  const log: ScriptedHarnessLog = { starts: [], prompts: [] }
  let calls = 0
  const state = (sessionId: string): HarnessV1ResumeSessionState => ({
    type: 'resume-session',
    harnessId: 'scripted',
    specificationVersion: 'harness-v1',
    data: { sessionId, prompts: log.prompts.length },
  })
  return {
    specificationVersion: 'harness-v1',
    harnessId: 'scripted',
    builtinTools: {},
    log,
    ...(bootstrap ? { getBootstrap: async () => bootstrap } : {}),
    doStart: async (options: HarnessV1StartOptions): Promise<HarnessV1Session> => {
      log.starts.push({
        sessionId: options.sessionId,
        resumed: options.resumeFrom !== undefined,
        sessionWorkDir: options.sessionWorkDir,
      })
      return {
        sessionId: options.sessionId,
        isResume: options.resumeFrom !== undefined,
        doPromptTurn: async ({ prompt, emit }): Promise<HarnessV1PromptControl> => {
          const text = typeof prompt === 'string' ? prompt : JSON.stringify(prompt.content)
          log.prompts.push(text)
          const turn = script(text)
          const waiting = new Map<string, (output: unknown) => void>()
          const done = (async () => {
            // The control goes back to the agent before the first event.
            await Promise.resolve()
            emit({ type: 'stream-start' })
            const results: unknown[] = []
            for (const step of turn.steps) {
              const call = step(results)
              const toolCallId = `call-${++calls}`
              const result = new Promise<unknown>((resolve) => waiting.set(toolCallId, resolve))
              emit({
                type: 'tool-call',
                toolCallId,
                toolName: call.toolName,
                input: JSON.stringify(call.input),
              } as HarnessV1StreamPart)
              results.push(await result)
              emit({ type: 'finish-step', finishReason: { unified: 'tool-calls', raw: undefined }, usage })
            }
            emit({ type: 'text-start', id: 'text' })
            emit({ type: 'text-delta', id: 'text', delta: turn.text(results) })
            emit({ type: 'text-end', id: 'text' })
            emit({ type: 'finish-step', finishReason: { unified: 'stop', raw: undefined }, usage })
            emit({ type: 'finish', finishReason: { unified: 'stop', raw: undefined }, totalUsage: usage })
          })()
          return {
            submitToolResult: async ({ toolCallId, output }) => {
              waiting.get(toolCallId)?.(output)
              waiting.delete(toolCallId)
            },
            done,
          }
        },
        doCompact: async () => {},
        doContinueTurn: async () => {
          throw new Error('the scripted harness does not suspend turns')
        },
        doSuspendTurn: async () => {
          throw new Error('the scripted harness does not suspend turns')
        },
        doDetach: async () => state(options.sessionId),
        doStop: async () => state(options.sessionId),
        doDestroy: async () => {},
      }
    },
  }
}
