// A local-e2b host restarted between two runs of a conversation (on its state dir and port): the sandbox comes
// back paused with its files but without its memory. sandkeep's health checks see it, the journal puts the
// manifest back, and the model is told what was lost.
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Runner } from '@openai/agents-core'
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing'
import { createSessionManager, type ResumeReport } from '@sandkeep/core'
import { createE2BProvider } from '@sandkeep/e2b'
import { type LocalE2BHost, startLocalE2B } from '@sandkeep/local-e2b'
import { createSandkeepSandboxClient } from '@sandkeep/openai-agents'
import { createRedisSessionStore } from '@sandkeep/redis'
import { describe, expect, it } from 'vitest'
import { buildAgent } from './helpers/agent.mjs'

describe('a host restart between runs', () => {
  it('finds the same sandbox, reports the lost memory and tells the model', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'sandkeep-oai-restart-'))
    const apiKey = `e2b_test_${randomUUID().replaceAll('-', '')}`
    let host: LocalE2BHost | undefined = await startLocalE2B({ stateDir, apiKey, logger: () => {} })
    const port = Number(new URL(host.apiUrl).port)
    const sessions = createSessionManager({
      store: createRedisSessionStore({ prefix: `skoaitest:${randomUUID().slice(0, 12)}` }),
      provider: createE2BProvider({ apiKey, apiUrl: host.apiUrl, sandboxUrl: host.sandboxUrl }),
      onTurnEnd: 'pause',
    })
    const reports: ResumeReport[] = []
    sessions.on('resume-end', ({ report }) => reports.push(report))
    const client = createSandkeepSandboxClient({ sessions })
    const conversationId = `oai-restart-${randomUUID()}`
    const run = (model: ScriptedModel, input: string) =>
      new Runner().run(buildAgent(model), input, { sandbox: { client, options: { conversationId } } })
    try {
      await run(
        new ScriptedModel([
          [functionCall('run_code', { code: 'x = 41' }, { callId: 'r1' })],
          [functionCall('exec_command', { cmd: 'echo on-disk > kept.txt' }, { callId: 'r2' })],
          [assistantMessage('done')],
        ]),
        'first',
      )
      const sandboxId = reports.at(-1)?.sandboxId
      await host.close()
      host = await startLocalE2B({ stateDir, apiKey, port, logger: () => {} })

      const model = new ScriptedModel([
        [functionCall('exec_command', { cmd: 'cat kept.txt notes.txt' }, { callId: 'r3' })],
        [functionCall('run_code', { code: "'x' in dir()" }, { callId: 'r4' })],
        [assistantMessage('x is gone')],
      ])
      const result = await run(model, 'second')
      const report = reports.at(-1)
      expect(report).toMatchObject({ sandboxId, stateLost: true })
      expect(report?.survived).toMatchObject({ filesystem: true, memory: false })
      const outputs = result.newItems
        .filter((item) => item.type === 'tool_call_output_item')
        .map((item) => JSON.stringify((item as { output: unknown }).output))
      expect(outputs[0]).toContain('on-disk')
      expect(outputs[0]).toContain('from the manifest')
      expect(outputs[1]).toContain('False')
      expect(JSON.stringify(model.calls[0]?.request.systemInstructions)).toContain('interpreter variables')
    } finally {
      await sessions.endSession(conversationId).catch(() => {})
      await sessions.close()
      await host?.close()
      await rm(stateDir, { recursive: true, force: true })
    }
  })
})
