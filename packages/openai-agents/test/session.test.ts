// The sandbox session's calls on a real local-e2b sandbox: files, directories, apply_patch, the workspace
// archive and an exposed port, all relative to the manifest's root.
import { applyDiff } from '@openai/agents-core'
import { createSandkeepSandboxClient, type SandkeepSandboxSession } from '@sandkeep/openai-agents'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useAgentSessions } from './helpers/sessions.js'

const rig = useAgentSessions('oai-session')
let session: SandkeepSandboxSession

beforeAll(async () => {
  const client = createSandkeepSandboxClient({ sessions: rig.sessions })
  session = await client.create({
    options: { conversationId: rig.newConversation(), tenant: rig.tenant },
    manifest: {
      entries: { src: { type: 'dir', children: { 'app.py': { type: 'file', content: 'print(1)\n' } } } },
    },
  })
}, 60_000)
afterAll(() => session?.stop())

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe('the sandkeep sandbox session', () => {
  it('materializes the manifest under the client root and answers file calls relative to it', async () => {
    expect(session.state.manifest.root).toBe('/home/user/workspace')
    expect(text(await session.readFile({ path: 'src/app.py' }))).toBe('print(1)\n')
    expect(await session.listDir({ path: 'src' })).toEqual([
      { name: 'app.py', path: '/home/user/workspace/src/app.py', type: 'file' },
    ])
    expect(await session.pathExists('src/app.py')).toBe(true)
    expect(await session.pathExists('src/missing.py')).toBe(false)
    expect(await session.directoryExists('src')).toBe(true)
    expect(await session.directoryExists('src/app.py')).toBe(false)
    const exec = await session.exec({ cmd: 'pwd && python3 src/app.py && exit 3' })
    expect(exec).toMatchObject({ stdout: '/home/user/workspace\n1\n', exitCode: 3 })
    await expect(session.exec({ cmd: 'true', tty: true })).rejects.toMatchObject({
      code: 'CAPABILITY_UNSUPPORTED',
    })
  })

  it('applies patches with the editor, as the SDK applyDiff computes them', async () => {
    const editor = session.createEditor()
    const create = '+first\n+second\n'
    await editor.createFile({ type: 'create_file', path: 'notes.md', diff: create })
    const created = applyDiff('', create, 'create')
    expect(text(await session.readFile({ path: 'notes.md' }))).toBe(created)
    const update = '@@\n first\n-second\n+2nd\n'
    await editor.updateFile({ type: 'update_file', path: 'notes.md', diff: update })
    const updated = text(await session.readFile({ path: 'notes.md' }))
    expect(updated).toBe(applyDiff(created, update))
    expect(updated).toContain('2nd')
    await editor.deleteFile({ type: 'delete_file', path: 'notes.md' })
    expect(await session.pathExists('notes.md')).toBe(false)
  })

  it('persists the workspace as an archive and hydrates it back', async () => {
    const archive = await session.persistWorkspace()
    expect(archive.byteLength).toBeGreaterThan(0)
    await session.exec({ cmd: 'rm -rf src' })
    expect(await session.pathExists('src/app.py')).toBe(false)
    await session.hydrateWorkspace(archive)
    expect(text(await session.readFile({ path: 'src/app.py' }))).toBe('print(1)\n')
  })

  it('resolves an exposed port to an endpoint that reaches the server in the sandbox', async () => {
    await session.turn.sandbox.startProcess('python3 -m http.server 8123', {
      cwd: '/home/user/workspace/src',
    })
    const endpoint = await session.resolveExposedPort(8123)
    expect(session.state.exposedPorts).toBeDefined()
    const headers = (endpoint.headers ?? {}) as Record<string, string>
    let body = ''
    for (let attempt = 0; attempt < 50 && !body.includes('print(1)'); attempt++) {
      const response = await fetch(`${endpoint.url}/app.py`, { headers }).catch(() => undefined)
      body = response?.ok ? await response.text() : ''
      if (!body) await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(body).toBe('print(1)\n')
  })
})
