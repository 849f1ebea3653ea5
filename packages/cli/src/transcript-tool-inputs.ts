// The scripted tool inputs of a transcript, checked against the tools' own input schemas before a replay.
import type { z } from 'zod'
import {
  formatPath,
  plainIssueMessage,
  TranscriptError,
  turnProblemLine,
  valueAt,
} from './transcript-problems.js'
import type { Transcript } from './transcript-schema.js'

/**
 * Checks every scripted tool input against the tool's own input schema before anything starts, so a typo in
 * a transcript is reported with its turn and field instead of as a failed tool call halfway through. Every
 * problem of every call is reported, each with its JSON path and in plain words.
 */
export async function checkToolInputs(transcript: Transcript): Promise<void> {
  const { sandboxTools } = await import('@sandkeep/ai-sdk')
  const { asSchema } = await import('ai')
  const tools = sandboxTools() as unknown as Record<string, { inputSchema: Parameters<typeof asSchema>[0] }>
  const problems: string[] = []
  for (const turn of transcript.turns) {
    for (const [index, call] of turn.toolCalls.entries()) {
      const tool = tools[call.tool]
      if (!tool) {
        problems.push(
          turnProblemLine(transcript, turn.index, `toolCalls[${index}].tool`, `no tool named ${call.tool}`),
        )
        continue
      }
      const result = await asSchema(tool.inputSchema).validate?.(call.input)
      if (!result || result.success) continue
      const issues = (result.error as { issues?: Array<z.core.$ZodIssue> }).issues ?? []
      if (issues.length === 0) {
        problems.push(
          turnProblemLine(transcript, turn.index, `toolCalls[${index}].input`, result.error.message),
        )
      }
      for (const issue of issues) {
        const path = formatPath(issue.path)
        const field = `toolCalls[${index}].input${path ? (path.startsWith('[') ? path : `.${path}`) : ''}`
        problems.push(
          turnProblemLine(
            transcript,
            turn.index,
            field,
            plainIssueMessage(issue, valueAt(call.input, issue.path)),
          ),
        )
      }
    }
  }
  if (problems.length > 0) throw new TranscriptError(transcript.file, problems)
}
