--[[
  Compare-and-set of the mapping, fenced: refused unless the lease is live, its token is at least the
  record's mappingToken and the mapped sandbox id equals the expected one. Creates the record on first
  creation, releases the creation claim and refreshes the session TTL.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal (TTL only)

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] holder id
  ARGV[4] fencing token of the lease
  ARGV[5] new sandbox id
  ARGV[6] expected sandbox id, '' for none
  ARGV[7] provider id
  ARGV[8] template as JSON (a string or null), '' to keep the stored one
  ARGV[9] state to record
  ARGV[10] session TTL, ms

  Returns { 'ok', core JSON, manifest JSON }
       or { 'lost', reason ('lapsed' | 'stale-token' | 'mismatch'), detail }
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"

local status, core, _, manifest = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
local holder_id, token = ARGV[3], tonumber(ARGV[4])
local now = store_now()
local holders = live_holders(KEYS[2], now)
if not holders then return { 'corrupt', 2 } end
local holder = holders[holder_id]
if not holder or holder[2] ~= token then return { 'lost', 'lapsed', '' } end
if core and token < core.mappingToken then
  return { 'lost', 'stale-token', tostring(core.mappingToken) }
end
local current = ''
if core and core.sandboxId ~= cjson.null then current = core.sandboxId end
if current ~= ARGV[6] then return { 'lost', 'mismatch', current } end

local state = ARGV[9]
if core then
  core.sandboxId = ARGV[5]
  core.providerId = ARGV[7]
  if ARGV[8] ~= '' then core.template = cjson.decode(ARGV[8]) end
  core.mappingToken = token
  core.updatedAt = now
else
  local template = cjson.null
  if ARGV[8] ~= '' then template = cjson.decode(ARGV[8]) end
  core = {
    schemaVersion = 1,
    tenant = ARGV[1],
    conversationId = ARGV[2],
    sandboxId = ARGV[5],
    providerId = ARGV[7],
    template = template,
    createdAt = now,
    updatedAt = now,
    lastTurnStartedAt = holder[3],
    lastTurnEndedAt = cjson.null,
    turnCount = 0,
    runningSeconds = 0,
    pausedSeconds = 0,
    state = state,
    pausedAt = cjson.null,
    mappingToken = token,
  }
  manifest = 'null'
end
apply_state(core, state, now)
if state ~= 'paused' then core.pausedAt = cjson.null end

local core_json = cjson.encode(core)
redis.call('HSET', KEYS[1], 'core', core_json, 'manifest', manifest)
redis.call('HDEL', KEYS[2], 'claim')
refresh(KEYS, tonumber(ARGV[10]))
return { 'ok', core_json, manifest }
