-- Helpers shared by the session scripts. The loader inlines this file where a script says
-- `--- @include "session"`. Every helper only touches keys its caller passed in KEYS.
--
-- Layout of one session (all keys share the hash tag {<tenant>:<hash>}, so one Cluster slot):
--   record   hash  core = JSON of the record's scalar fields, manifest = JSON of the manifest or 'null'
--            (the manifest is kept as the caller's JSON: cjson would turn its empty arrays into objects)
--   lease    hash  token = last fencing token, claim = holder id of the creation claimant,
--                  jbytes = journal bytes, h:<holderId> = '<expiresAt>:<token>:<startedAt>'
--   journal  list  JSON entries in recording order

-- The store clock: Redis server time in epoch ms, so leases never depend on a client's clock.
local function store_now()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local function is_number(value)
  return type(value) == 'number'
end

local function is_nullable(value, kind)
  return value == cjson.null or type(value) == kind
end

-- Reads and checks the record without writing anything, so a caller can refuse before any write.
-- Returns 'none'; or 'corrupt'; or 'ok', the decoded scalar fields, their JSON and the manifest JSON.
-- `conversation_id` may be '' when the caller only knows the hash (listing).
local function load_record(key, tenant, conversation_id)
  local raw = redis.pcall('HMGET', key, 'core', 'manifest')
  if raw.err then return 'corrupt' end
  if not raw[1] then
    if redis.call('EXISTS', key) == 0 then return 'none' end
    return 'corrupt'
  end
  local ok, core = pcall(cjson.decode, raw[1])
  if not ok or type(core) ~= 'table' or core.schemaVersion ~= 1
    or type(core.tenant) ~= 'string' or type(core.conversationId) ~= 'string'
    or not is_nullable(core.sandboxId, 'string') or not is_nullable(core.lastTurnEndedAt, 'number')
    or not is_number(core.mappingToken) or not is_number(core.turnCount)
    or not is_number(core.runningSeconds) or not is_number(core.pausedSeconds)
    or not is_number(core.createdAt) or type(core.state) ~= 'string' then
    return 'corrupt'
  end
  if core.tenant ~= tenant or (conversation_id ~= '' and core.conversationId ~= conversation_id) then
    return 'corrupt'
  end
  local manifest = raw[2] or 'null'
  if manifest ~= 'null' then
    local decoded_ok, decoded = pcall(cjson.decode, manifest)
    if not decoded_ok or type(decoded) ~= 'table' then return 'corrupt' end
  end
  return 'ok', core, raw[1], manifest
end

-- Reads the lease hash; deletes lapsed holders, and the claim when its holder lapsed.
-- Returns the live holders (id -> { expiresAt, token, startedAt }), their count, the claimant (or nil) and
-- the last fencing token; or nil when the key is not a hash (the caller refuses as corrupt).
local function live_holders(key, now)
  local flat = redis.pcall('HGETALL', key)
  if flat.err then return nil end
  local holders, count, claim, counter, lapsed = {}, 0, nil, 0, {}
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
    elseif field == 'token' then
      counter = tonumber(value) or 0
    end
  end
  if #lapsed > 0 then redis.call('HDEL', key, unpack(lapsed)) end
  if claim and not holders[claim] then
    redis.call('HDEL', key, 'claim')
    claim = nil
  end
  return holders, count, claim, counter
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

-- Records a sandbox state; pausedAt is set on pause and cleared when running again.
local function apply_state(core, state, at)
  core.state = state
  if state == 'paused' then
    core.pausedAt = at
  elseif state == 'running' then
    core.pausedAt = cjson.null
  end
end
