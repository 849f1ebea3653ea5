--[[
  Ends a holder's turn in one round trip: removes the holder (and its creation claim), writes the manifest
  and counters, applies stateIfLast when no live holder remains, refreshes the TTL, and tells whether the
  caller was the last live holder. A lapsed lease still records the turn. Refuses a corrupt record without
  writing anything.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal (TTL only)

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] holder id
  ARGV[4] fencing token of the lease
  ARGV[5] manifest JSON, 'null' to clear it, '' to keep the stored one
  ARGV[6] sandbox id the manifest describes ('' when none); written only when it is the mapped one
  ARGV[7] turn end, epoch ms
  ARGV[8] seconds to add to runningSeconds
  ARGV[9] seconds to add to pausedSeconds
  ARGV[10] state to record if last, '' to leave it
  ARGV[11] session TTL, ms

  Returns { 'ok', last (0|1), core JSON or '', manifest JSON or '' }
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"

local status, core, core_json, manifest = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
local holder_id, token = ARGV[3], tonumber(ARGV[4])
local now = store_now()
local holders, count, claim = live_holders(KEYS[2], now)
if not holders then return { 'corrupt', 2 } end
local holder = holders[holder_id]
if holder and holder[2] == token then
  count = count - 1
  holders[holder_id] = nil
  if claim == holder_id then
    redis.call('HDEL', KEYS[2], 'h:' .. holder_id, 'claim')
  else
    redis.call('HDEL', KEYS[2], 'h:' .. holder_id)
  end
end
local last = 0
if count == 0 then last = 1 end

if core then
  local new_manifest = ARGV[5]
  if new_manifest == 'null' or (new_manifest ~= '' and core.sandboxId == ARGV[6]) then
    manifest = new_manifest
  end
  local ended = tonumber(ARGV[7])
  if core.lastTurnEndedAt == cjson.null or ended > core.lastTurnEndedAt then core.lastTurnEndedAt = ended end
  core.turnCount = core.turnCount + 1
  core.runningSeconds = core.runningSeconds + tonumber(ARGV[8])
  core.pausedSeconds = core.pausedSeconds + tonumber(ARGV[9])
  if last == 1 and ARGV[10] ~= '' then apply_state(core, ARGV[10], now) end
  core.updatedAt = now
  core_json = cjson.encode(core)
  redis.call('HSET', KEYS[1], 'core', core_json, 'manifest', manifest)
end
refresh(KEYS, tonumber(ARGV[11]))
return { 'ok', last, core_json or '', manifest or '' }
