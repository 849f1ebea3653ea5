// A second process that resumes an interrupted run: reads the RunState string from a file, approves the pending
// tool call, and runs it to the end on the same Redis and local-e2b host as the process that wrote it.
// Prints one JSON line: the tool's output, the final output and the sandbox the turn used.
import { readFile } from 'node:fs/promises'
import { Runner, RunState } from '@openai/agents-core'
import { assistantMessage, ScriptedModel } from '@openai/agents-core/testing'
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { createSandkeepSandboxClient } from '@sandkeep/openai-agents'
import { createRedisSessionStore } from '@sandkeep/redis'
import { buildAgent } from './agent.mjs'

const config = JSON.parse(process.argv[2])
const sessions = createSessionManager({
  store: createRedisSessionStore({ prefix: config.prefix }),
  provider: createE2BProvider({
    apiKey: config.apiKey,
    apiUrl: config.apiUrl,
    sandboxUrl: config.sandboxUrl,
  }),
  onTurnEnd: 'pause',
})
const reports = []
sessions.on('resume-end', ({ report }) => reports.push(report))
const client = createSandkeepSandboxClient({ sessions })
const agent = buildAgent(new ScriptedModel([[assistantMessage('y times six is 42')]]))
try {
  const state = await RunState.fromString(agent, await readFile(config.stateFile, 'utf8'))
  for (const interruption of state.getInterruptions()) state.approve(interruption)
  const result = await new Runner().run(agent, state, {
    sandbox: { client, options: { conversationId: config.conversationId, tenant: config.tenant } },
  })
  const outputs = result.newItems
    .filter((item) => item.type === 'tool_call_output_item')
    .map((item) => item.output)
  console.log(
    JSON.stringify({
      outputs,
      finalOutput: result.finalOutput,
      sandboxIds: reports.map((report) => report.sandboxId),
      outcomes: reports.map((report) => report.outcome),
    }),
  )
} catch (error) {
  console.log(JSON.stringify({ error: { name: error?.name, code: error?.code, message: error?.message } }))
} finally {
  await sessions.close()
}
