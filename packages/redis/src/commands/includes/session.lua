-- Helpers shared by the session scripts. The loader inlines this file where a script says
-- `--- @include "session"`. Every helper only touches keys its caller passes in (from KEYS).
--
-- Layout of one session (all keys share the hash tag {<tenant>:<hash>}, so one Cluster slot):
--   record   hash  one field per scalar of the SessionRecord (a missing field is null), plus `manifest`
--                  (the manifest's JSON, kept as the caller sent it). Counters are plain fields so a turn
--                  never round-trips JSON through Lua (cjson would also turn empty arrays into objects),
--                  and scripts address them by position (FIELDS) rather than building tables by name.
--   lease    hash  token = last fencing token, claim = holder id of the creation claimant,
--                  hold = holder id whose release holds the session while it pauses the sandbox,
--                  jbytes = journal bytes, h:<holderId> = '<expiresAt>:<token>:<startedAt>',
--                  cp = '1' while the checkpoints hash exists (a turn's begin and end then refresh its TTL)
--   journal  list  JSON entries in recording order
--   checkpoints hash  the checkpoint tree (see includes/checkpoints.lua); the record's `head` names the
--                  checkpoint the session continues from ('' = the root)

-- The store clock: Redis server time in epoch ms, so leases never depend on a client's clock.
local function store_now()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- The record's fields, in the order scripts read them (HMGET) and reply with them. The client reads the
-- reply in the same order (RECORD_FIELDS in record-fields.ts): keep both lists, and the HMGET in
-- load_record, in step.
local FIELDS = { 'schemaVersion', 'tenant', 'conversationId', 'sandboxId', 'providerId', 'template',
  'createdAt', 'updatedAt', 'lastTurnStartedAt', 'lastTurnEndedAt', 'turnCount', 'runningSeconds',
  'pausedSeconds', 'state', 'pausedAt', 'mappingToken', 'manifest', 'lastTurnUsedSandbox', 'restore', 'head' }
local F_SCHEMA, F_TENANT, F_CONVERSATION, F_SANDBOX, F_PROVIDER, F_TEMPLATE = 1, 2, 3, 4, 5, 6
local F_CREATED, F_UPDATED, F_STARTED, F_ENDED, F_TURNS, F_RUNNING = 7, 8, 9, 10, 11, 12
local F_PAUSED_SECONDS, F_STATE, F_PAUSED_AT, F_TOKEN, F_MANIFEST, F_USED = 13, 14, 15, 16, 17, 18
local F_RESTORE, F_HEAD = 19, 20

local function integer(value)
  return string.format('%d', value)
end

-- Seconds are floats; 17 significant digits read back to the same double.
local function float(value)
  return string.format('%.17g', value)
end

-- Text a store could have written (the kit's checks in @sandkeep/core's store/record.ts): absent, or 1 to
-- max_bytes bytes with no control character (C0 and DEL: %c; C1 as UTF-8; U+2028/U+2029), as setSandbox
-- accepts.
local function printable_or_null(value, max_bytes)
  if not value then return true end
  if #value == 0 or #value > max_bytes then return false end
  -- One scan for the common case (no control character, no lead byte of C1 or U+2028/9); the precise
  -- tests only when one of those bytes is there.
  if string.find(value, '[%c\194\226]') and (string.find(value, '%c') or string.find(value, '\194[\128-\159]')
    or string.find(value, '\226\128[\168\169]')) then
    return false
  end
  return true
end

-- A count a store could have written: a non-negative integer a double holds exactly (2^53 - 1 at most).
local function is_count(value)
  return value ~= false and value ~= nil and string.match(value, '^%d+$') ~= nil
    and tonumber(value) <= 9007199254740991
end

-- A time or an amount of seconds: a finite number, not negative, written as the client reads numbers back
-- (digits, an optional fraction and exponent: what '%d' and '%.17g' write; tonumber alone would also take
-- '0x10' or ' 5', which the client refuses only after this script has written).
local function is_amount(value)
  if type(value) ~= 'string' then return false end
  -- Digits only (every time, and seconds a turn has not yet counted): one scan.
  if string.find(value, '^%d+$') then return tonumber(value) ~= math.huge end
  local rest = string.match(value, '^%d+(.*)$')
  if rest and string.sub(rest, 1, 1) == '.' then rest = string.match(rest, '^%.%d+(.*)$') end
  if not rest or (rest ~= '' and not string.match(rest, '^[eE][+-]?%d+$')) then return false end
  return tonumber(value) ~= math.huge
end

-- A checkpoint id as the store makes them: 'ck_' and 22 base64url characters.
local function is_checkpoint_id(value)
  return type(value) == 'string' and #value == 25 and string.match(value, '^ck_[%w_-]+$') ~= nil
end

local function is_text(value)
  return type(value) == 'string'
end

-- A JSON array of entries (or null/absent) each of which passes `each`; a JSON object is not an array.
local function list_of(value, each)
  if value == nil or value == cjson.null then return true end
  if type(value) ~= 'table' then return false end
  for index, entry in pairs(value) do
    if type(index) ~= 'number' or type(entry) ~= 'table' or not each(entry) then return false end
  end
  return true
end

local function memory_entry_ok(entry)
  return is_text(entry.language) and is_text(entry.variable) and is_text(entry.value)
    and (entry.contextId == cjson.null or is_text(entry.contextId))
end

local function process_entry_ok(entry)
  local pid = entry.pid
  return type(pid) == 'number' and pid == math.floor(pid) and pid >= 0 and pid <= 2147483648
    and is_text(entry.command) and (entry.cwd == nil or is_text(entry.cwd))
end

-- The stored manifest has the shape a release writes (the kit's checkManifest): a finite writtenAt, a
-- sandbox id, memory and processes entries, a filesystem marker or null. An in-memory engine whose cjson
-- only recognises brackets (cjson.outline_only) is checked that far.
local function manifest_ok(text)
  local ok, manifest = pcall(cjson.decode, text)
  if not ok or type(manifest) ~= 'table' then return false end
  if cjson.outline_only then return true end
  local written = manifest.writtenAt
  if type(written) ~= 'number' or written ~= written or written == math.huge or written == -math.huge then
    return false
  end
  if not is_text(manifest.sandboxId) or not printable_or_null(manifest.sandboxId, 256) then return false end
  local filesystem = manifest.filesystem
  if filesystem ~= nil and filesystem ~= cjson.null
    and (type(filesystem) ~= 'table' or not is_text(filesystem.path) or not is_text(filesystem.value)) then
    return false
  end
  return list_of(manifest.memory, memory_entry_ok) and list_of(manifest.processes, process_entry_ok)
end

local function is_time(value)
  return type(value) == 'number' and value == value and value >= 0 and value ~= math.huge
end

local function is_turn(value)
  return type(value) == 'number' and value >= 0 and value == math.floor(value) and value <= 9007199254740991
end

-- A decoded snapshot of a checkpoint or restore: JSON null, or { snapshotId, keeps = { files, memory } }.
local function snapshot_value_ok(snapshot)
  if snapshot == nil or snapshot == cjson.null then return true end
  if type(snapshot) ~= 'table' or not is_text(snapshot.snapshotId)
    or not printable_or_null(snapshot.snapshotId, 256) or type(snapshot.keeps) ~= 'table' then
    return false
  end
  return type(snapshot.keeps.files) == 'boolean' and type(snapshot.keeps.memory) == 'boolean'
end

-- A stored snapshot's JSON (the kit's checkSnapshot); checked as far as the engine's cjson goes.
local function snapshot_ok(text)
  local ok, snapshot = pcall(cjson.decode, text)
  if not ok or type(snapshot) ~= 'table' then return false end
  if cjson.outline_only then return true end
  return snapshot_value_ok(snapshot)
end

-- A pending restore as a rewind or fork writes it (the kit's parseStoredRestore): it names the snapshot the
-- next turn creates its sandbox from, so a damaged one is refused before anything is written.
local function restore_ok(text)
  local ok, restore = pcall(cjson.decode, text)
  if not ok or type(restore) ~= 'table' then return false end
  if cjson.outline_only then return true end
  if (restore.kind ~= 'rewound' and restore.kind ~= 'forked') or not is_turn(restore.turn)
    or not is_time(restore.at) or not snapshot_value_ok(restore.snapshot) then
    return false
  end
  local from = restore.fromSandboxId
  if from ~= nil and from ~= cjson.null and (not is_text(from) or not printable_or_null(from, 256)) then
    return false
  end
  local checkpoint = restore.checkpointId
  if checkpoint ~= nil and checkpoint ~= cjson.null and not is_checkpoint_id(checkpoint) then return false end
  return restore.fromConversationId == nil or is_text(restore.fromConversationId)
end

-- Position of `checked` in load_record's reading (not a FIELDS entry: never part of a reply): the SHA1 of a
-- manifest text a check passed. It vouches for any manifest with that digest, whoever wrote it, so a stale
-- one is harmless and nothing needs to clear it; a manifest written by anything else than a turn's end (or
-- damaged) has another digest and is checked in full. Hashing a manifest costs a fifth of decoding and
-- walking it (docs/benchmarks.md).
local F_CHECKED = 21

-- The digest `checked` holds for a manifest text; nil where the engine has no sha1hex (then every load checks
-- the manifest in full).
local function manifest_digest(text)
  if redis.sha1hex then return redis.sha1hex(text) end
  return nil
end

-- Reads and checks the record without writing anything, so a caller can refuse before any write.
-- Returns 'none'; or 'corrupt'; or 'ok', the record's values in FIELDS order (false = null) and, when the
-- manifest was checked in full here, its digest for the caller to store in `checked` with its next write.
-- `conversation_id` may be '' when the caller only knows the hash (listing).
local function load_record(key, tenant, conversation_id)
  -- Field names spelled out rather than unpack(FIELDS): this runs twice per turn.
  local record = redis.pcall('HMGET', key, 'schemaVersion', 'tenant', 'conversationId', 'sandboxId',
    'providerId', 'template', 'createdAt', 'updatedAt', 'lastTurnStartedAt', 'lastTurnEndedAt', 'turnCount',
    'runningSeconds', 'pausedSeconds', 'state', 'pausedAt', 'mappingToken', 'manifest', 'lastTurnUsedSandbox',
    'restore', 'head', 'checked')
  if record.err then return 'corrupt' end
  local checked = record[F_CHECKED]
  record[F_CHECKED] = nil
  if not record[F_SCHEMA] then
    if redis.call('EXISTS', key) == 0 then return 'none' end
    return 'corrupt'
  end
  if record[F_SCHEMA] ~= '1' or record[F_TENANT] ~= tenant or not record[F_CONVERSATION]
    or (conversation_id ~= '' and record[F_CONVERSATION] ~= conversation_id) then
    return 'corrupt'
  end
  local state = record[F_STATE]
  if (state ~= 'running' and state ~= 'paused' and state ~= 'killed' and state ~= 'unknown')
    or not is_amount(record[F_CREATED]) or not is_amount(record[F_UPDATED]) or not is_count(record[F_TURNS])
    or not is_amount(record[F_RUNNING]) or not is_amount(record[F_PAUSED_SECONDS])
    or not is_count(record[F_TOKEN])
    or (record[F_STARTED] and not is_amount(record[F_STARTED]))
    or (record[F_ENDED] and not is_amount(record[F_ENDED]))
    or (record[F_PAUSED_AT] and not is_amount(record[F_PAUSED_AT]))
    or (record[F_USED] and record[F_USED] ~= '0' and record[F_USED] ~= '1') then
    return 'corrupt'
  end
  -- A sandbox id with a newline (or any id setSandbox would refuse) must never reach a provider, nor be
  -- written around: refused here, before the caller's first write.
  if not printable_or_null(record[F_SANDBOX], 256) or not printable_or_null(record[F_PROVIDER], 128)
    or not printable_or_null(record[F_TEMPLATE], 256) then
    return 'corrupt'
  end
  if record[F_RESTORE] and not restore_ok(record[F_RESTORE]) then return 'corrupt' end
  -- The head: absent (a record from before checkpoint trees), '' (the root) or a checkpoint id.
  if record[F_HEAD] and record[F_HEAD] ~= '' and not is_checkpoint_id(record[F_HEAD]) then return 'corrupt' end
  local manifest = record[F_MANIFEST]
  if not manifest then return 'ok', record end
  local digest = manifest_digest(manifest)
  if digest and digest == checked then return 'ok', record end
  if not manifest_ok(manifest) then return 'corrupt' end
  return 'ok', record, digest
end

-- Writes the record's values at the given FIELDS positions; a value of false is deleted (null). With
-- `digest`, also stores it in `checked` (same HSET).
local function save_fields(key, record, positions, digest)
  local set, unset = {}, {}
  for i = 1, #positions do
    local position = positions[i]
    local value = record[position]
    if value then
      set[#set + 1] = FIELDS[position]
      set[#set + 1] = value
    else
      unset[#unset + 1] = FIELDS[position]
    end
  end
  if digest then
    set[#set + 1] = 'checked'
    set[#set + 1] = digest
  end
  if #set > 0 then redis.call('HSET', key, unpack(set)) end
  if #unset > 0 then redis.call('HDEL', key, unpack(unset)) end
end

-- Reads the lease hash; deletes lapsed holders, and the claim when its holder lapsed.
-- Returns the live holders (id -> { expiresAt, token, startedAt }), their count, the claimant (or nil), the
-- last fencing token, whether a journal exists (append-journal keeps `jbytes` exactly while it does),
-- `run_from` (the earliest start of running among the turns released while others held the session, or
-- nil), the holder of a live hold (or nil; a hold whose holder lapsed is deleted) and whether checkpoints
-- exist (`cp`); or nil when the key is not a hash (the caller refuses as corrupt).
local function live_holders(key, now)
  local flat = redis.pcall('HGETALL', key)
  if flat.err then return nil end
  local holders, count, claim, counter, journal, run_from, hold, lapsed = {}, 0, nil, 0, false, nil, nil, {}
  local checkpoints = false
  for i = 1, #flat, 2 do
    local field, value = flat[i], flat[i + 1]
    if string.sub(field, 1, 2) == 'h:' then
      local expires_at, token, started_at = string.match(value, '^(%d+):(%d+):(%d+)$')
      expires_at = tonumber(expires_at)
      if expires_at and expires_at > now then
        holders[string.sub(field, 3)] = { expires_at, tonumber(token), tonumber(started_at) }
        count = count + 1
      else
        lapsed[#lapsed + 1] = field
      end
    elseif field == 'claim' then
      claim = value
    elseif field == 'hold' then
      hold = value
    elseif field == 'token' then
      counter = tonumber(value) or 0
    elseif field == 'jbytes' then
      journal = true
    elseif field == 'run_from' then
      run_from = tonumber(value)
    elseif field == 'cp' then
      checkpoints = true
    end
  end
  if #lapsed > 0 then redis.call('HDEL', key, unpack(lapsed)) end
  if claim and not holders[claim] then
    redis.call('HDEL', key, 'claim')
    claim = nil
  end
  if hold and not holders[hold] then
    redis.call('HDEL', key, 'hold')
    hold = nil
  end
  return holders, count, claim, counter, journal, run_from, hold, checkpoints
end

local function holder_value(expires_at, token, started_at)
  return string.format('%d:%d:%d', expires_at, token, started_at)
end

-- Sets the idle TTL of every key of the session (a missing key stays missing).
local function refresh(keys, ttl)
  for i = 1, #keys do
    redis.call('PEXPIRE', keys[i], ttl)
  end
end

-- The same for a turn's begin and end, which know from the lease hash whether a journal and checkpoints
-- exist: a session without them saves the commands. `keys` = { record, lease, journal, checkpoints }.
local function refresh_session(keys, has_journal, has_checkpoints, ttl)
  redis.call('PEXPIRE', keys[1], ttl)
  redis.call('PEXPIRE', keys[2], ttl)
  if has_journal then redis.call('PEXPIRE', keys[3], ttl) end
  if has_checkpoints then redis.call('PEXPIRE', keys[4], ttl) end
end

-- Records a sandbox state; pausedAt is set on pause and cleared when running again.
local function apply_state(record, state, at)
  record[F_STATE] = state
  if state == 'paused' then
    record[F_PAUSED_AT] = integer(at)
  elseif state == 'running' then
    record[F_PAUSED_AT] = false
  end
end
