import { writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, runCli } from './helpers.js'

beforeAll(assertBuilt)

describe('sandkeep usage errors', () => {
  it.each([
    [['demo', '--nope'], 'demo', 'unknown option --nope'],
    [
      ['demo', '--pause-mode', 'hibernate'],
      'demo',
      '--pause-mode must be one of memory, filesystem, processes (got "hibernate")',
    ],
    [
      ['demo', '--fault', 'meteor'],
      'demo',
      '--fault must be one of expire-retention, host-restart, kill-server, drop-memory, connect-5xx, id-change (got "meteor")',
    ],
    [['demo', '--fault-turn', '3'], 'demo', '--fault-turn needs --fault'],
    [
      ['demo', '--fault', 'drop-memory', '--fault-turn', 'x'],
      'demo',
      '--fault-turn must be a whole number (got "x")',
    ],
    [
      ['demo', '--fault', 'drop-memory', '--fault-turn', '9'],
      'demo',
      '--fault-turn 9 is past the last turn (5)',
    ],
    [
      ['demo', '--idle', 'forever'],
      'demo',
      '--idle must be a duration like 1500ms, 2s or 5m (got "forever")',
    ],
    [['demo', '--json=1'], 'demo', '--json does not take a value'],
    [['demo', '--fault'], 'demo', '--fault needs a value <name>'],
    [['demo', '--provider', 'e2b'], 'demo', '--provider e2b needs E2B_API_KEY in the environment'],
    [['demo', 'extra'], 'demo', 'unexpected argument "extra"'],
    [
      ['demo', '--conversation', 'a\u0007b'],
      'demo',
      'conversationId contains a control character (newline, NUL, ...); strip it before calling.',
    ],
    [
      ['demo', '--isolation', 'chroot'],
      'demo',
      '--isolation must be one of auto, bubblewrap, none (got "chroot")',
    ],
    [
      ['host', '--isolation', 'chroot'],
      'host',
      '--isolation must be one of auto, bubblewrap, none (got "chroot")',
    ],
    [['host', '--port', '70000'], 'host', '--port must be between 0 and 65535 (got 70000)'],
    [
      ['host', '--pause-mode', 'x'],
      'host',
      '--pause-mode must be one of memory, filesystem, processes (got "x")',
    ],
    [['sessions', 'list', '--limit', '0'], 'sessions list', '--limit must be between 1 and 1000 (got 0)'],
    [
      ['sessions', 'list'],
      'sessions list',
      'no session store: set REDIS_URL (or pass --redis); the in-memory store of a demo run is gone when it exits',
    ],
    [['sessions', 'show'], 'sessions show', 'missing <conversation-id>'],
    [['sessions', 'rewind', 'chat'], 'sessions rewind', 'missing --to-turn <n>'],
    [['sessions', 'rewind'], 'sessions rewind', 'missing <conversation-id>'],
    [
      ['sessions', 'rewind', 'chat', '--to-turn=-1'],
      'sessions rewind',
      '--to-turn must be a whole number (got "-1")',
    ],
    [
      ['sessions', 'rewind', 'chat', '--to-turn', '2'],
      'sessions rewind',
      'no session store: set REDIS_URL (or pass --redis); the in-memory store of a demo run is gone when it exits',
    ],
    [['sessions', 'restore', 'chat'], 'sessions restore', 'missing --checkpoint <id> (or --root)'],
    [
      ['sessions', 'restore', 'chat', '--checkpoint', 'ck_a', '--root'],
      'sessions restore',
      'give --checkpoint <id> or --root, not both',
    ],
    [
      ['sessions', 'restore', 'chat', '--checkpoint', 'ck a'],
      'sessions restore',
      '--checkpoint "ck a" is not a checkpoint id (letters, digits and _ . : -; sandkeep sessions show lists them)',
    ],
    [
      ['sessions', 'restore', 'chat', '--checkpoint', 'ck_a'],
      'sessions restore',
      'no session store: set REDIS_URL (or pass --redis); the in-memory store of a demo run is gone when it exits',
    ],
    [['sessions', 'fork', 'chat'], 'sessions fork', 'missing <new-conversation-id>'],
    [
      ['sessions', 'fork', 'chat', 'chat'],
      'sessions fork',
      '<new-conversation-id> must differ from the conversation forked',
    ],
    [
      ['sessions', 'fork', 'chat', 'chat-b', '--at-turn', '1.5'],
      'sessions fork',
      '--at-turn must be a whole number (got "1.5")',
    ],
    [
      ['sessions', 'rewind', 'chat', '--to-turn', '3', '--to-turn', '1'],
      'sessions rewind',
      '--to-turn was given more than once: give it once',
    ],
    [
      ['demo', '--pause-mode', 'memory', '--pause-mode=filesystem'],
      'demo',
      '--pause-mode was given more than once: give it once',
    ],
    [
      ['host', '--hostname', '0.0.0.0'],
      'host',
      '--hostname must be a loopback address (127.0.0.1, ::1, localhost), got "0.0.0.0": the host runs any code for whoever holds its API key. To serve other machines, start it from code: startLocalE2B({ hostname, allowRemote: true }) from @sandkeep/local-e2b',
    ],
    [
      ['sessions', 'frobnicate'],
      'sessions',
      'unknown subcommand "frobnicate"; use list, show, end, gc, restore, rewind or fork',
    ],
  ])('%j exits 2 with one line', async (args, command, message) => {
    const result = await runCli(args)
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    expect(result.stderr).toBe(`sandkeep ${command}: ${message} (see sandkeep ${command} --help)\n`)
  })

  it('an unknown command exits 2 with one line', async () => {
    const result = await runCli(['launch'])
    expect(result.code).toBe(2)
    expect(result.stderr).toBe(
      'sandkeep: unknown command "launch"; use demo, sessions or host (see sandkeep --help)\n',
    )
  })

  it.each([
    'demo',
    'host',
    'sessions',
    'sessions list',
    'sessions show',
    'sessions end',
    'sessions gc',
    'sessions restore',
    'sessions rewind',
    'sessions fork',
  ])('sandkeep %s --help prints usage and exits 0', async (command) => {
    const result = await runCli([...command.split(' '), '--help'])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(`Usage: sandkeep ${command}`)
    expect(result.stdout).toContain('--help')
  })

  it('top-level help and version', async () => {
    const help = await runCli(['--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('sessions list')
    const version = await runCli(['--version'])
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
    const bare = await runCli([])
    expect(bare.code).toBe(2)
  })
})

describe('malformed transcripts', () => {
  it('names the file, the turn and the field, exits 2 and starts nothing', async () => {
    const file = join(tmpdir(), `sandkeep-bad-${process.pid}-${Date.now()}.json`)
    await writeFile(
      file,
      JSON.stringify({
        version: 1,
        title: 'broken',
        turns: [
          { user: 'ok', text: 'fine' },
          { user: 'hm', toolCalls: [{ tool: 'runShell', input: {} }], text: 'x' },
          { user: 'x', idleBefore: 'a while' },
        ],
      }),
    )
    const result = await runCli(['demo', '--transcript', file])
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain('sandkeep demo: invalid transcript')
    expect(result.stderr).toContain(`${file}: turn 2, field toolCalls[0].tool: expected one of`)
    expect(result.stderr).toContain(`${file}: turn 3, field idleBefore:`)
    expect(result.stderr).toContain(`${file}: turn 3, field text: missing (expected string)`)
  })

  it('checks tool inputs against the tool schemas', async () => {
    const file = join(tmpdir(), `sandkeep-bad-input-${process.pid}-${Date.now()}.json`)
    await writeFile(
      file,
      JSON.stringify({
        version: 1,
        title: 'bad input',
        turns: [{ user: 'run', toolCalls: [{ tool: 'runCommand', input: { cmd: 'ls' } }], text: 'x' }],
      }),
    )
    const result = await runCli(['demo', '--transcript', file])
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/turn 1, field toolCalls\[0\]\.input\.command: /)
  })

  it('reports JSON syntax errors and missing files', async () => {
    const file = join(tmpdir(), `sandkeep-syntax-${process.pid}-${Date.now()}.json`)
    await writeFile(file, '{\n  "version": 1,\n  "title": "x",\n  turns: []\n}\n')
    const syntax = await runCli(['demo', '--transcript', file])
    expect(syntax.code).toBe(2)
    expect(syntax.stderr).toMatch(/not valid JSON \(line 4, column \d+/)
    const missing = await runCli(['demo', '--transcript', '/nonexistent/chat.json'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('/nonexistent/chat.json: cannot read the transcript (no such file)')
  })
})
