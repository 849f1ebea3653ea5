--[[
  Records the sandbox state (a pause outside release, or a failed one) and refreshes the session TTL.

  KEYS[1] record    KEYS[2] lease (TTL only)    KEYS[3] journal (TTL only)

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] state
  ARGV[4] when it happened, epoch ms ('' = store clock now); becomes pausedAt for 'paused'
  ARGV[5] session TTL, ms

  Returns { 'ok', core JSON, manifest JSON } or { 'none' } or { 'corrupt', 1 }
]]
--- @include "session"

local status, core, _, manifest = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
if status == 'none' then return { 'none' } end
local now = store_now()
apply_state(core, ARGV[3], tonumber(ARGV[4]) or now)
core.updatedAt = now
local core_json = cjson.encode(core)
redis.call('HSET', KEYS[1], 'core', core_json)
refresh(KEYS, tonumber(ARGV[5]))
return { 'ok', core_json, manifest }
