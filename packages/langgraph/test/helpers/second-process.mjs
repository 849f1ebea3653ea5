// The second process of resume.test.ts: the same Redis sessions, the same local-e2b host and the same SQLite
// checkpoint file, its own session manager and saver. It runs one turn of the thread given and prints the
// tool results and what its resume found, as one JSON line.
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite'
import { createSessionManager } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { SandkeepCheckpointSaver } from '@sandkeep/langgraph'
import { createRedisSessionStore } from '@sandkeep/redis'
import { buildAgent, lastToolResults, script } from './agent.mjs'

const config = JSON.parse(process.argv[2])
const sessions = createSessionManager({
  store: createRedisSessionStore({ redis: config.redisUrl, prefix: config.prefix }),
  provider: createE2BProvider({ ...config.host, snapshots: { keepsMemory: false } }),
  onTurnEnd: 'pause',
  checkpoints: { every: 'turn', keep: 50 },
})
const reports = []
sessions.on('resume-end', ({ report }) =>
  reports.push({ outcome: report.outcome, sandboxId: report.sandboxId }),
)
const saver = new SandkeepCheckpointSaver({
  saver: SqliteSaver.fromConnString(config.sqlite),
  sessions,
  tenant: config.tenant,
})
const graph = buildAgent(saver)
const state = await graph.invoke({ messages: [script(config.rounds)] }, saver.runConfig(config.thread))
const results = lastToolResults(state, config.results)
await sessions.close()
process.stdout.write(`${JSON.stringify({ results, reports })}\n`)
