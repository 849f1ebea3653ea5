-- The checkpoint a release asks for (ARGV[16..19]), planned before anything is written: refused (the
-- record no longer maps its sandbox, or a restore's higher token mapped since the turn began), or the tree
-- read and checked. Returns nil when there is none to plan, 'corrupt' and the index in KEYS of a damaged
-- key, or the plan.
local function plan_checkpoint(record, keys, token)
  if ARGV[16] == '' then return nil end
  local nodes, ids, seq = tree_nodes(keys[4])
  if not nodes then return 'corrupt', 4 end
  if not record or token < tonumber(record[F_TOKEN]) or record[F_SANDBOX] ~= ARGV[16] then
    return { refused = true }
  end
  return { nodes = nodes, ids = ids, seq = seq }
end

-- Writes a planned checkpoint of the turn `record` ended (after the record's write: its turn count and
-- manifest), as the head's child. Returns its reply and the pruned ones, or nil and the index in KEYS of a
-- damaged key.
local function write_checkpoint(plan, record, keys)
  return add_checkpoint(keys, record, plan.nodes, plan.ids, plan.seq, { id = ARGV[19],
    created = tonumber(ARGV[7]), turn = tonumber(record[F_TURNS]), from = 'e', sandbox = ARGV[16],
    snapshot = ARGV[17], manifest = record[F_MANIFEST], keep = tonumber(ARGV[18]) })
end

-- The end of a turn (inlined by the loader where a script says `--- @include "release"`, after "session"
-- and "checkpoints"), shared by release-4 (Cluster: the index is touched by its own command) and release-5
-- (one node: same script). `keys` = { record, lease, journal, checkpoints }. Reads ARGV[1..19] as
-- documented in release-4.lua. Returns the script's reply table.
local function release_turn(keys)
  local record_key, lease_key = keys[1], keys[2]
  local status, record, loaded_digest = load_record(record_key, ARGV[1], ARGV[2])
  if status == 'corrupt' then return { 'corrupt', 1 } end
  local holder_id, token = ARGV[3], tonumber(ARGV[4])
  local plan, bad = plan_checkpoint(record, keys, token)
  if plan == 'corrupt' then return { 'corrupt', bad } end
  local now = store_now()
  local holders, count, claim, _, has_journal, run_from, _, has_checkpoints = live_holders(lease_key, now)
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
    -- A turn that began before a rewind still pending (its token is below the one the rewind took) was
    -- discarded with what it did: it is not a turn of the rewound conversation, nor does it set its state.
    local discarded = record[F_RESTORE] and tonumber(ARGV[4]) < tonumber(record[F_TOKEN])
    if not discarded then record[F_TURNS] = integer(tonumber(record[F_TURNS]) + 1) end
    local running = tonumber(record[F_RUNNING]) + tonumber(ARGV[8])
    if last == 1 and since then running = running + math.max(0, ended - since) / 1000 end
    record[F_RUNNING] = float(running)
    record[F_PAUSED_SECONDS] = float(tonumber(record[F_PAUSED_SECONDS]) + tonumber(ARGV[9]))
    if ARGV[14] ~= '' then
      record[F_USED] = ARGV[14]
      positions[#positions + 1] = F_USED
    end
    if last == 1 and ARGV[10] ~= '' and not discarded then
      apply_state(record, ARGV[10], now)
      positions[#positions + 1] = F_STATE
      positions[#positions + 1] = F_PAUSED_AT
    end
    record[F_UPDATED] = integer(now)
    -- A manifest from the caller was checked by the client (core's checkReleaseInput, the kit's
    -- checkManifest) before it was sent: its digest vouches for it at the next load; so does the digest of
    -- a kept one this load checked in full.
    local digest = loaded_digest
    if ARGV[5] ~= '' and record[F_MANIFEST] == ARGV[5] then
      digest = manifest_digest(ARGV[5])
    elseif not record[F_MANIFEST] then
      digest = nil
    end
    save_fields(record_key, record, positions, digest)
  end
  -- 0: no checkpoint asked for; 1: recorded (then the checkpoint and the ones pruned); 2: refused.
  local checkpoint_status, checkpoint, pruned = 0, {}, {}
  if plan and plan.refused then
    checkpoint_status = 2
  elseif plan then
    checkpoint, pruned = write_checkpoint(plan, record, keys)
    -- A taken id (a collision of 128 random bits) or a tree damaged meanwhile: refused, the turn stands.
    if type(checkpoint) == 'table' then
      checkpoint_status = 1
      has_checkpoints = true
    else
      checkpoint_status, checkpoint, pruned = 2, {}, {}
    end
  end
  refresh_session(keys, has_journal, has_checkpoints, tonumber(ARGV[11]))
  return { 'ok', last, record or {}, held, checkpoint_status, checkpoint, as_reply(pruned) }
end
