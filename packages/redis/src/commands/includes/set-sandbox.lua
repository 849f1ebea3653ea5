-- The sandbox mapping write (inlined by the loader where a script says `--- @include "set-sandbox"`),
-- shared by set-sandbox-4 (Cluster) and set-sandbox-5 (one node: also touches the index).
-- Reads ARGV[1..11] as documented in set-sandbox-4.lua. Returns the script's reply table.
local function set_sandbox(record_key, lease_key, journal_key, checkpoints_key)
  local status, record = load_record(record_key, ARGV[1], ARGV[2])
  if status == 'corrupt' then return { 'corrupt', 1 } end
  local holder_id, token = ARGV[3], tonumber(ARGV[4])
  local now = store_now()
  local holders = live_holders(lease_key, now)
  if not holders then return { 'corrupt', 2 } end
  local holder = holders[holder_id]
  if not holder or holder[2] ~= token then return { 'lost', 'lapsed', '' } end
  if record and token < tonumber(record[F_TOKEN]) then
    return { 'lost', 'stale-token', record[F_TOKEN] }
  end
  local current = ''
  if record and record[F_SANDBOX] then current = record[F_SANDBOX] end
  if current ~= ARGV[6] then return { 'lost', 'mismatch', current } end

  -- The new sandbox is the one a pending rewind or fork asked for: the restore is done.
  local positions = { F_SANDBOX, F_PROVIDER, F_STATE, F_PAUSED_AT, F_TOKEN, F_UPDATED, F_RESTORE }
  if not record then
    record = { '1', ARGV[1], ARGV[2], false, false, false, integer(now), false, integer(holder[3]), false, '0', '0',
      '0', false, false, false, false, false, false, '' }
    for _, position in ipairs({ F_SCHEMA, F_TENANT, F_CONVERSATION, F_CREATED, F_STARTED, F_TURNS, F_RUNNING,
      F_PAUSED_SECONDS, F_HEAD }) do
      positions[#positions + 1] = position
    end
  end
  record[F_SANDBOX] = ARGV[5]
  record[F_PROVIDER] = ARGV[7]
  if ARGV[8] == 'set' then
    record[F_TEMPLATE] = ARGV[9]
    positions[#positions + 1] = F_TEMPLATE
  elseif ARGV[8] == 'null' then
    record[F_TEMPLATE] = false
    positions[#positions + 1] = F_TEMPLATE
  end
  record[F_STATE] = ARGV[10]
  if ARGV[10] == 'paused' then record[F_PAUSED_AT] = integer(now) else record[F_PAUSED_AT] = false end
  record[F_TOKEN] = integer(token)
  record[F_RESTORE] = false
  record[F_UPDATED] = integer(now)
  save_fields(record_key, record, positions)
  redis.call('HDEL', lease_key, 'claim')
  refresh({ record_key, lease_key, journal_key, checkpoints_key }, tonumber(ARGV[11]))
  return { 'ok', record, record[F_UPDATED] }
end
