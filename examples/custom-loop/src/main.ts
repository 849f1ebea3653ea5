// Replays transcript.json through the hand-written loop on the embedded defaults and prints each turn.
//   bash scripts/dev.sh node examples/custom-loop/src/main.ts   (at the repository root)
import { createSessionManager } from '@sandkeep/core'
import { embeddedDefaults } from '@sandkeep-examples/shared'
import type { ModelMessage } from 'ai'
import { createScriptedModel, loadTranscript } from 'sandkeep'
import { runTurn, type TurnResult } from './agent.ts'

export async function main(log: (line: string) => void = console.log): Promise<TurnResult[]> {
  const transcript = await loadTranscript(new URL('../transcript.json', import.meta.url).pathname)
  const model = createScriptedModel(transcript)
  const defaults = await embeddedDefaults()
  const sessions = createSessionManager({ store: defaults.store, provider: defaults.provider })
  const conversationId = `custom-loop-${Date.now()}`
  const history: ModelMessage[] = []
  const results: TurnResult[] = []
  try {
    for (const turn of transcript.turns) {
      const result = await runTurn({ sessions, conversationId, model, history, userMessage: turn.user })
      results.push(result)
      log(`user       ${turn.user}`)
      for (const call of result.toolCalls) log(`  ${call.toolName}  ${JSON.stringify(call.output)}`)
      log(`assistant  ${result.text}`)
      const report = result.report
      if (report) {
        log(
          `  sandbox ${report.outcome} in ${Math.round(report.timings.totalMs)} ms; ` +
            `memory ${report.survived.memory ?? 'n/a'}, files ${report.survived.filesystem ?? 'n/a'}`,
        )
      }
    }
    await sessions.endSession(conversationId)
    return results
  } finally {
    await defaults.close()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main()
}
