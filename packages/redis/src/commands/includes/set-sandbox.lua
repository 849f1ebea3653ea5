-- The sandbox mapping write (inlined by the loader where a script says `--- @include "set-sandbox"`),
-- shared by set-sandbox-3 (Cluster) and set-sandbox-4 (one node: also touches the index).
-- Reads ARGV[1..10] as documented in set-sandbox-3.lua. Returns the script's reply table.
local function set_sandbox(record_key, lease_key, journal_key)
  local status, core, _, manifest = load_record(record_key, ARGV[1], ARGV[2])
  if status == 'corrupt' then return { 'corrupt', 1 } end
  local holder_id, token = ARGV[3], tonumber(ARGV[4])
  local now = store_now()
  local holders = live_holders(lease_key, now)
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
  redis.call('HSET', record_key, 'core', core_json, 'manifest', manifest)
  redis.call('HDEL', lease_key, 'claim')
  refresh({ record_key, lease_key, journal_key }, tonumber(ARGV[10]))
  return { 'ok', core_json, manifest }
end
