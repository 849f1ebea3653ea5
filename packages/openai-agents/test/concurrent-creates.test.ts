// Five runs of one conversation starting at once: the manager's lease lets one of them create the sandbox and
// the others share it, so the conversation never gets a second sandbox.
import { hashConversationId, SANDKEEP_METADATA } from '@sandkeep/core'
import { createSandkeepSandboxClient } from '@sandkeep/openai-agents'
import { describe, expect, it } from 'vitest'
import { useAgentSessions } from './helpers/sessions.js'

const rig = useAgentSessions('oai-concurrent')

describe('concurrent creates of one conversation', () => {
  it('share one sandbox, paused once the last of them ends', async () => {
    const conversationId = rig.newConversation()
    const client = createSandkeepSandboxClient({ sessions: rig.sessions })
    const created = await Promise.all(
      Array.from({ length: 5 }, () => client.create({ options: { conversationId, tenant: rig.tenant } })),
    )
    const sandboxIds = new Set(created.map((session) => session.report?.sandboxId))
    expect(sandboxIds.size).toBe(1)
    const [sandboxId] = [...sandboxIds]
    // The platform holds one sandbox for this conversation, whichever run made it.
    const listed = await rig.sessions.provider.list?.({
      metadata: { [SANDKEEP_METADATA.session]: hashConversationId(conversationId) },
    })
    expect(listed?.sandboxes.map((info) => info.sandboxId)).toEqual([sandboxId])
    // Every one of them sees what another wrote: it is one sandbox.
    await created[0]?.exec({ cmd: 'echo shared > shared.txt' })
    for (const session of created) {
      expect((await session.exec({ cmd: 'cat shared.txt' })).stdout).toBe('shared\n')
    }
    for (const session of created.slice(0, 4)) await session.stop()
    expect((await rig.sessions.provider.getInfo?.(sandboxId ?? ''))?.state).toBe('running')
    await created[4]?.stop()
    expect((await rig.sessions.provider.getInfo?.(sandboxId ?? ''))?.state).toBe('paused')
  })
})
