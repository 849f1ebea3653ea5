-- The end of a turn (inlined by the loader where a script says `--- @include "release"`), shared by
-- release-3 (Cluster: the index is touched by its own command) and release-4 (one node: same script).
-- Reads ARGV[1..15] as documented in release-3.lua. Returns the script's reply table.
local function release_turn(record_key, lease_key, journal_key)
  local status, record = load_record(record_key, ARGV[1], ARGV[2])
  if status == 'corrupt' then return { 'corrupt', 1 } end
  local holder_id, token = ARGV[3], tonumber(ARGV[4])
  local now = store_now()
  local holders, count, claim, _, has_journal, run_from = live_holders(lease_key, now)
  if not holders then return { 'corrupt', 2 } end
  local holder = holders[holder_id]
  local held = 0
  if holder and holder[2] == token then
    count = count - 1
    -- The last holder may keep its lease while it pauses: acquire refuses others until release-hold.
    if count == 0 and ARGV[15] == '1' then held = 1 end
    if held == 1 then
      redis.call('HSET', lease_key, 'hold', holder_id)
      if claim == holder_id then redis.call('HDEL', lease_key, 'claim') end
    elseif claim == holder_id then
      redis.call('HDEL', lease_key, 'h:' .. holder_id, 'claim')
    else
      redis.call('HDEL', lease_key, 'h:' .. holder_id)
    end
  end
  local last = 0
  if count == 0 then last = 1 end
  -- The sandbox runs from the first start among overlapping turns to the last one's end: only the last
  -- holder counts it; an earlier one leaves its start in the lease hash.
  local since, started = run_from, tonumber(ARGV[13])
  if started and (not since or started < since) then since = started end
  if last == 1 then
    if run_from then redis.call('HDEL', lease_key, 'run_from') end
  elseif since and since ~= run_from then
    redis.call('HSET', lease_key, 'run_from', integer(since))
  end

  if record then
    local positions = { F_ENDED, F_TURNS, F_RUNNING, F_PAUSED_SECONDS, F_UPDATED }
    -- A manifest describes one sandbox: a holder whose sandbox was re-mapped meanwhile must not replace
    -- the manifest of the new one; and one conditional on the turn count is stale once another turn ended.
    if ARGV[5] == 'null' then
      record[F_MANIFEST] = false
      positions[#positions + 1] = F_MANIFEST
    elseif ARGV[5] ~= '' and record[F_SANDBOX] == ARGV[6]
      and (ARGV[12] == '' or tonumber(record[F_TURNS]) == tonumber(ARGV[12])) then
      record[F_MANIFEST] = ARGV[5]
      positions[#positions + 1] = F_MANIFEST
    end
    local ended = tonumber(ARGV[7])
    if not record[F_ENDED] or ended > tonumber(record[F_ENDED]) then record[F_ENDED] = integer(ended) end
    record[F_TURNS] = integer(tonumber(record[F_TURNS]) + 1)
    local running = tonumber(record[F_RUNNING]) + tonumber(ARGV[8])
    if last == 1 and since then running = running + math.max(0, ended - since) / 1000 end
    record[F_RUNNING] = float(running)
    record[F_PAUSED_SECONDS] = float(tonumber(record[F_PAUSED_SECONDS]) + tonumber(ARGV[9]))
    if ARGV[14] ~= '' then
      record[F_USED] = ARGV[14]
      positions[#positions + 1] = F_USED
    end
    if last == 1 and ARGV[10] ~= '' then
      apply_state(record, ARGV[10], now)
      positions[#positions + 1] = F_STATE
      positions[#positions + 1] = F_PAUSED_AT
    end
    record[F_UPDATED] = integer(now)
    save_fields(record_key, record, positions)
  end
  refresh_session(record_key, lease_key, journal_key, has_journal, tonumber(ARGV[11]))
  return { 'ok', last, record or {}, held }
end
