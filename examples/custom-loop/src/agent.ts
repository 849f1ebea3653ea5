// A hand-written agent loop. No tool `execute`: the loop asks the model for one step at a time with
// generateText, runs the tool calls itself on the turn's sandbox, and feeds the results back. The whole
// user message is one sandkeep turn (sessions.withTurn): resumed before the first tool call, paused after.
import type { ResumeReport, SandboxHandle, SessionManager, Turn } from '@sandkeep/core'
import { generateText, type LanguageModel, type ModelMessage, tool } from 'ai'
import { z } from 'zod'

// What the model sees. The loop below implements them; a real model gets these descriptions and schemas.
export const tools = {
  runCode: tool({
    description: "Run Python in the sandbox's persistent interpreter; variables survive across turns.",
    inputSchema: z.object({ code: z.string(), setup: z.boolean().optional() }),
  }),
  runCommand: tool({
    description: 'Run a bash command in the sandbox.',
    inputSchema: z.object({ command: z.string(), setup: z.boolean().optional() }),
  }),
  writeFile: tool({
    description: 'Write a text file in the sandbox.',
    inputSchema: z.object({ path: z.string(), content: z.string(), setup: z.boolean().optional() }),
  }),
}

/** What one turn did. */
export interface TurnResult {
  text: string
  toolCalls: Array<{ toolName: string; input: unknown; output: unknown }>
  report: ResumeReport | undefined
}

/** Runs one tool call on the sandbox; failures come back as results so the model can react. */
async function runTool(turn: Turn, toolName: string, input: Record<string, unknown>): Promise<unknown> {
  const sandbox: SandboxHandle = turn.sandbox
  try {
    switch (toolName) {
      case 'runCode': {
        const code = String(input.code)
        const result = await sandbox.runCode(code)
        // Steps the model marks as setup are journaled: replayed if the sandbox is ever recreated.
        if (input.setup && !result.error) await turn.journal.record({ kind: 'code', code })
        return result
      }
      case 'runCommand': {
        const command = String(input.command)
        const result = await sandbox.runCommand(command)
        if (input.setup && result.exitCode === 0) await turn.journal.record({ kind: 'command', command })
        return result
      }
      case 'writeFile': {
        const path = String(input.path)
        const content = String(input.content)
        await sandbox.writeFile(path, content)
        if (input.setup) await turn.journal.record({ kind: 'file', path, content })
        return { path, bytes: Buffer.byteLength(content) }
      }
      default:
        return { error: `unknown tool ${toolName}` }
    }
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) }
  }
}

/** One user message = one turn of the conversation, with at most `maxSteps` model calls. */
export function runTurn(options: {
  sessions: SessionManager
  conversationId: string
  model: LanguageModel
  history: ModelMessage[]
  userMessage: string
  maxSteps?: number
}): Promise<TurnResult> {
  const { sessions, conversationId, model, history } = options
  return sessions.withTurn(
    conversationId,
    async (turn) => {
      const toolCalls: TurnResult['toolCalls'] = []
      history.push({ role: 'user', content: options.userMessage })
      for (let step = 0; step < (options.maxSteps ?? 10); step++) {
        const result = await generateText({ model, tools, messages: history })
        history.push(...result.response.messages)
        if (result.toolCalls.length === 0) return { text: result.text, toolCalls, report: turn.report }
        const outputs = []
        for (const call of result.toolCalls) {
          const output = await runTool(turn, call.toolName, call.input as Record<string, unknown>)
          toolCalls.push({ toolName: call.toolName, input: call.input, output })
          outputs.push({
            type: 'tool-result' as const,
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            output: { type: 'json' as const, value: JSON.parse(JSON.stringify(output)) },
          })
        }
        history.push({ role: 'tool', content: outputs })
      }
      return { text: '(stopped: too many steps)', toolCalls, report: turn.report }
    },
    // Lazy: a turn whose model never calls a tool makes no sandbox call at all.
    { lazy: true },
  )
}
