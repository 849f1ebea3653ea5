// What the parts of a turn's scripts cost inside Redis, without the client, the network or the other
// commands of a turn: each part runs 2,000 times in a loop inside one script (the script's own TIME before
// and after), five rounds, the lowest kept, on a redis-server of this bench's own (a random loopback port).
// A loop keeps Redis's caches warm, so these are the parts' costs on a quiet machine, below what a turn pays
// between other work (store-cost.mjs measures that).
//
//   node packages/redis/bench/script-parts.mjs [ROOT...]
//
// ROOT: checkouts of this repository to compare (default: this one); each part runs with that checkout's
// includes/session.lua on the same record, alternating.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'

const here = resolve(fileURLToPath(import.meta.url), '../../../..')
const roots = process.argv.length > 2 ? process.argv.slice(2) : [here]
const LOOPS = 2000
const ROUNDS = 5

// A record as a turn that used the sandbox leaves it (the mock provider's sandbox, a sentinel, the marker).
const manifest = JSON.stringify({
  writtenAt: 1764690000000,
  sandboxId: 'mock-sbx-0123456789abcdef',
  memory: [
    { language: 'python', variable: '__sandkeep_sentinel', value: 'a1b2c3d4e5f6a7b8', contextId: null },
  ],
  processes: [],
  filesystem: { path: '/home/user/.sandkeep/marker', value: 'f00dbabe12345678' },
})
const record = {
  schemaVersion: '1',
  tenant: 'default',
  conversationId: 'conversation-1',
  sandboxId: 'mock-sbx-0123456789abcdef',
  providerId: 'mock',
  template: 'base',
  createdAt: '1764690000000',
  updatedAt: '1764690000000',
  lastTurnStartedAt: '1764690000000',
  lastTurnEndedAt: '1764690000000',
  turnCount: '3',
  runningSeconds: '1.2345678901234567',
  pausedSeconds: '0',
  state: 'paused',
  pausedAt: '1764690000000',
  mappingToken: '7',
  manifest,
  lastTurnUsedSandbox: '1',
  head: '',
}

// The parts, as Lua run after the tree's session.lua; `stamp` is what that tree's turn leaves in `checked`.
const parts = {
  'load_record, as a turn left the record': 'load_record(KEYS[1], "default", "conversation-1")',
  'load_record, checked in full':
    'redis.call("HDEL", KEYS[1], "checked"); load_record(KEYS[1], "default", "conversation-1")',
  'HDEL alone (subtract from the line above)': 'redis.call("HDEL", KEYS[1], "checked")',
  // A tree whose record_digest stamps every value (before this change) or only the manifest's digest.
  "begin's record write": (digests) =>
    digests
      ? 'stamp_fields(KEYS[1], R, { F_STARTED, F_UPDATED })'
      : "redis.call('HSET', KEYS[1], 'lastTurnStartedAt', R[F_STARTED], 'updatedAt', R[F_STARTED])",
  'manifest decode and walk': 'manifest_ok(R[F_MANIFEST])',
  'SHA1 of the manifest': 'redis.sha1hex(R[F_MANIFEST])',
  'lease read (HGETALL, parse)': 'live_holders(KEYS[2], 0)',
  'one PEXPIRE': 'redis.call("PEXPIRE", KEYS[1], 86400000)',
  TIME: 'store_now()',
}
const stamp = (digests) =>
  digests
    ? "redis.call('HSET', KEYS[1], 'checked', record_digest(R))"
    : "redis.call('HSET', KEYS[1], 'checked', redis.sha1hex(R[F_MANIFEST]))"

const port = 20000 + Math.floor(Math.random() * 10000)
const child = spawn(
  'redis-server',
  ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
  },
)
await new Promise((ready) => {
  let said = ''
  child.stdout.on('data', (chunk) => {
    said += chunk
    if (said.includes('Ready to accept connections')) ready()
  })
})
const redis = new Redis(`redis://127.0.0.1:${port}`)
try {
  const sessions = roots.map((root) =>
    readFileSync(resolve(root, 'packages/redis/src/commands/includes/session.lua'), 'utf8'),
  )
  const best = new Map()
  for (let round = 0; round < ROUNDS; round++) {
    for (const [tree, session] of sessions.entries()) {
      const digests = session.includes('local function record_digest')
      for (const [name, part] of Object.entries(parts)) {
        const body = typeof part === 'function' ? part(digests) : part
        await redis.del('record', 'lease')
        await redis.hset('record', record)
        await redis.hset('lease', { token: '7' })
        const lua = `${session}
local R = redis.call('HMGET', KEYS[1], unpack(FIELDS))
${stamp(digests)}
local t0 = redis.call('TIME')
for i = 1, ${LOOPS} do
${body}
end
local t1 = redis.call('TIME')
return (t1[1] - t0[1]) * 1000000 + (t1[2] - t0[2])`
        const usec = (await redis.eval(lua, 2, 'record', 'lease')) / LOOPS
        const key = `${name}\t${tree}`
        best.set(key, Math.min(best.get(key) ?? Number.POSITIVE_INFINITY, usec))
      }
    }
  }
  console.log(`| part | ${roots.join(' | ')} |`)
  console.log(`| --- |${roots.map(() => ' --- |').join('')}`)
  for (const name of Object.keys(parts)) {
    console.log(
      `| ${name} | ${roots.map((_, tree) => best.get(`${name}\t${tree}`).toFixed(2)).join(' | ')} |`,
    )
  }
} finally {
  redis.disconnect()
  child.kill('SIGTERM')
}
