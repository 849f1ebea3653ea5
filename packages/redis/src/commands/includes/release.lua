-- The end of a turn (inlined by the loader where a script says `--- @include "release"`), shared by
-- release-3 (Cluster: the index is touched by its own command) and release-4 (one node: same script).
-- Reads ARGV[1..11] as documented in release-3.lua. Returns the script's reply table.
local function release_turn(record_key, lease_key, journal_key)
  local status, core, core_json, manifest = load_record(record_key, ARGV[1], ARGV[2])
  if status == 'corrupt' then return { 'corrupt', 1 } end
  local holder_id, token = ARGV[3], tonumber(ARGV[4])
  local now = store_now()
  local holders, count, claim = live_holders(lease_key, now)
  if not holders then return { 'corrupt', 2 } end
  local holder = holders[holder_id]
  if holder and holder[2] == token then
    count = count - 1
    holders[holder_id] = nil
    if claim == holder_id then
      redis.call('HDEL', lease_key, 'h:' .. holder_id, 'claim')
    else
      redis.call('HDEL', lease_key, 'h:' .. holder_id)
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
    redis.call('HSET', record_key, 'core', core_json, 'manifest', manifest)
  end
  refresh({ record_key, lease_key, journal_key }, tonumber(ARGV[11]))
  return { 'ok', last, core_json or '', manifest or '' }
end
