// Three runs of one conversation through the Agents SDK's Runner on sandkeep's sandbox client, on the
// embedded defaults (a local-e2b host in this process, the memory store or Redis with REDIS_URL). The model
// is the SDK's ScriptedModel, so no API key is needed; put any model on the agent instead.
//   bash scripts/dev.sh node examples/openai-agents/src/main.ts   (at the repository root)
import { type Model, Runner, RunState, setTracingDisabled } from '@openai/agents-core'
import { filesystem, SandboxAgent, shell } from '@openai/agents-core/sandbox'
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing'
import { createSessionManager, type ResumeReport } from '@sandkeep/core'
import { codeInterpreter, createSandkeepSandboxClient } from '@sandkeep/openai-agents'
import { embeddedDefaults } from '@sandkeep-examples/shared'

setTracingDisabled(true)

function buildAgent(model: Model) {
  return new SandboxAgent({
    name: 'analyst',
    instructions: 'You work in the sandbox.',
    model,
    capabilities: [
      filesystem(),
      shell(),
      codeInterpreter({ needsApproval: (code) => code.includes('os.remove') }),
    ],
    defaultManifest: { entries: { 'README.txt': { type: 'file', content: 'Data lives in data.csv.\n' } } },
  })
}

const script: Array<Parameters<typeof functionCall> | string>[] = [
  [
    ['run_code', { code: 'rows = [3, 4, 5]\nsum(rows)' }, { callId: 'a1' }],
    ['exec_command', { cmd: 'printf "3\\n4\\n5\\n" > data.csv && cat README.txt' }, { callId: 'a2' }],
    'Saved three rows; their sum is 12.',
  ],
  [['run_code', { code: 'rows.append(6)\nsum(rows)' }, { callId: 'b1' }], 'With a fourth row the sum is 18.'],
  [
    ['run_code', { code: "import os\nos.remove('data.csv')\nlen(rows)" }, { callId: 'c1' }],
    'Removed data.csv; the four rows stay in memory.',
  ],
]

/** One scripted model per run: each tool call in turn, then the answer. */
function modelFor(steps: Array<Parameters<typeof functionCall> | string>): ScriptedModel {
  return new ScriptedModel(
    steps.map((step) => (typeof step === 'string' ? [assistantMessage(step)] : [functionCall(...step)])),
  )
}

/** What the example reads of a run's result. */
interface RunOutcome {
  newItems: ReadonlyArray<{ type: string; output?: unknown }>
  finalOutput?: unknown
  interruptions: ReadonlyArray<{ name?: string | undefined }>
}

export interface ExampleRun {
  user: string
  outputs: string[]
  finalOutput: string | undefined
  report: ResumeReport | undefined
  interrupted: boolean
}

export async function main(log: (line: string) => void = console.log): Promise<ExampleRun[]> {
  const defaults = await embeddedDefaults({ redisPrefix: 'sandkeep-example-openai-agents' })
  const sessions = createSessionManager({ store: defaults.store, provider: defaults.provider })
  const reports: ResumeReport[] = []
  sessions.on('resume-end', ({ report }) => reports.push(report))
  const conversationId = `openai-agents-${Date.now()}`
  const sandbox = { client: createSandkeepSandboxClient({ sessions }), options: { conversationId } }
  const results: ExampleRun[] = []
  const record = (user: string, result: RunOutcome) => {
    const outputs = result.newItems
      .filter((item) => item.type === 'tool_call_output_item')
      .map((item) => JSON.stringify(item.output))
    const run = {
      user,
      outputs,
      finalOutput: result.interruptions.length > 0 ? undefined : (result.finalOutput as string | undefined),
      report: reports.at(-1),
      interrupted: result.interruptions.length > 0,
    }
    results.push(run)
    log(`user       ${user}`)
    for (const output of outputs) log(`  tool     ${output}`)
    if (run.interrupted)
      log(`  waiting  for approval of ${result.interruptions.map((item) => item.name).join(', ')}`)
    else log(`assistant  ${run.finalOutput}`)
    if (run.report) log(`  sandbox  ${run.report.outcome} in ${Math.round(run.report.timings.totalMs)} ms`)
  }
  try {
    const inputs = ['Store these rows.', 'Add a row.', 'Delete the file.']
    for (const [index, user] of inputs.entries()) {
      const steps = script[index] ?? []
      const result = await new Runner().run(buildAgent(modelFor(steps)), user, { sandbox })
      record(user, result)
      if (result.interruptions.length === 0) continue
      // The run stopped for an approval: the state is a string (the conversation's key, no sandbox id, no
      // secret) that a later request, in any process, picks up. The sandbox is paused meanwhile.
      const saved = result.state.toString()
      const agent = buildAgent(modelFor(steps.slice(-1)))
      const state = await RunState.fromString(agent, saved)
      for (const interruption of state.getInterruptions()) state.approve(interruption)
      record('(approved)', await new Runner().run(agent, state, { sandbox }))
    }
    await sessions.endSession(conversationId)
    return results
  } finally {
    await sessions.close({ keepStore: true })
    await defaults.close()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await main()
}
