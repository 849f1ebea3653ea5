-- A fork's new session (inlined by the loader where a script says `--- @include "create-fork"`, after
-- "session"), shared by create-fork-4 (Cluster: the index is touched by its own command) and create-fork-5
-- (one node: same script). `keys` = { record, lease, journal, checkpoints }. Reads ARGV as documented in
-- create-fork-4.lua. Returns the script's reply table.
local function create_fork(keys)
  local status = load_record(keys[1], ARGV[1], ARGV[2])
  if status == 'corrupt' then return { 'corrupt', 1 } end
  if status == 'ok' then return { 'exists' } end
  local now = store_now()
  local holders, count = live_holders(keys[2], now)
  if not holders then return { 'corrupt', 2 } end
  if count > 0 then return { 'exists' } end

  local steps = tonumber(ARGV[11])
  local entries, bytes = {}, 0
  for i = 1, steps do
    local entry = '{"recordedAt":' .. integer(now) .. ',"step":' .. ARGV[11 + i] .. '}'
    entries[i] = entry
    bytes = bytes + #entry
  end
  if steps > tonumber(ARGV[8]) or bytes > tonumber(ARGV[9]) then return { 'full', steps, bytes } end

  -- What a session without a record left (a journal recorded before any sandbox) is not the fork's.
  redis.call('DEL', keys[3])
  redis.call('DEL', keys[4])
  for first = 1, steps, 1000 do
    redis.call('RPUSH', keys[3], unpack(entries, first, math.min(first + 999, steps)))
  end
  if steps > 0 then
    redis.call('HSET', keys[2], 'jbytes', bytes)
  else
    redis.call('HDEL', keys[2], 'jbytes')
  end
  redis.call('HDEL', keys[2], 'cp')
  local created = integer(now)
  local restore = string.sub(ARGV[7], 1, -2) .. ',"at":' .. created .. '}'
  local record = { '1', ARGV[1], ARGV[2], false, ARGV[3] ~= '' and ARGV[3], ARGV[4] ~= '' and ARGV[4], created,
    created, false, false, integer(tonumber(ARGV[5])), '0', '0', 'unknown', false, '0', ARGV[6] ~= '' and ARGV[6],
    false, restore, '' }
  save_fields(keys[1], record, { F_SCHEMA, F_TENANT, F_CONVERSATION, F_PROVIDER, F_TEMPLATE, F_CREATED, F_UPDATED,
    F_TURNS, F_RUNNING, F_PAUSED_SECONDS, F_STATE, F_TOKEN, F_MANIFEST, F_RESTORE, F_HEAD })
  refresh(keys, tonumber(ARGV[10]))
  return { 'ok', record }
end
