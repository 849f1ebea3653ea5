-- The kept checkpoints of a session (inlined where a script says `--- @include "checkpoints"`, after
-- "session"). One hash per session, three fields per kept turn T (a decimal integer from 1):
--   T           '<createdAt>:<journalLength>:<sandboxId>'
--   T:snapshot  the snapshot's JSON as the client sent it (absent: null)
--   T:manifest  the manifest's JSON, copied from the record at the turn's release (absent: null)
-- Scripts move the parts as text, so no JSON is built or parsed in Lua (an in-memory engine has no cjson);
-- the client reads them back strictly (checkpoint-fields.ts).

-- A checkpoint's first field as a script writes it.
local function checkpoint_meta_ok(text)
  if type(text) ~= 'string' then return false end
  local created, length, sandbox = string.match(text, '^(%d+):(%d+):(.+)$')
  return created ~= nil and is_count(created) and is_count(length) and printable_or_null(sandbox, 256)
end

-- The kept turns, ascending, with every turn's first field checked; nil when the key is not a hash or holds
-- a field or value no script writes (the caller refuses as corrupt before writing anything).
local function checkpoint_turns(key)
  local fields = redis.pcall('HKEYS', key)
  if fields.err then return nil end
  local turns, names, kept, parts = {}, {}, {}, {}
  for i = 1, #fields do
    local turn, part = string.match(fields[i], '^([1-9]%d*)(.*)$')
    if not turn or #turn > 15 then return nil end
    if part == '' then
      names[#names + 1] = turn
      turns[#turns + 1] = tonumber(turn)
      kept[turn] = true
    elseif part == ':snapshot' or part == ':manifest' then
      parts[#parts + 1] = turn
    else
      return nil
    end
  end
  for i = 1, #parts do
    if not kept[parts[i]] then return nil end
  end
  if #names > 0 then
    local metas = redis.call('HMGET', key, unpack(names))
    for i = 1, #names do
      if not checkpoint_meta_ok(metas[i]) then return nil end
    end
  end
  table.sort(turns)
  return turns
end

-- One kept checkpoint as a reply { turn, first field, snapshot JSON or false, manifest JSON or false },
-- its parts checked; nil when one is damaged.
local function read_checkpoint(key, turn)
  local name = integer(turn)
  local values = redis.call('HMGET', key, name, name .. ':snapshot', name .. ':manifest')
  if not checkpoint_meta_ok(values[1]) then return nil end
  if values[2] and not snapshot_ok(values[2]) then return nil end
  if values[3] and not manifest_ok(values[3]) then return nil end
  return { name, values[1], values[2], values[3] }
end

-- The checkpoints of `turns` as replies, oldest first; nil when one is damaged.
local function read_checkpoints(key, turns)
  local replies = {}
  for i = 1, #turns do
    local reply = read_checkpoint(key, turns[i])
    if not reply then return nil end
    replies[#replies + 1] = reply
  end
  return replies
end

local function drop_checkpoint(key, turn)
  local name = integer(turn)
  redis.call('HDEL', key, name, name .. ':snapshot', name .. ':manifest')
end

-- Writes field `name` of a checkpoint: the text, or no field for null (false or '').
local function write_checkpoint_part(key, name, value)
  if value and value ~= '' then
    redis.call('HSET', key, name, value)
  else
    redis.call('HDEL', key, name)
  end
end

-- A list built in order, as a reply: copied from the end, the order ioredis-mock's engine needs to hand
-- a table back as an array (real Redis takes either).
local function as_reply(list)
  local reply = {}
  for i = #list, 1, -1 do reply[i] = list[i] end
  return reply
end

-- A sandbox id (printable, checked by load_record) as a JSON string: only `"` and `\` need escaping.
local function json_string(value)
  if not value then return 'null' end
  return '"' .. string.gsub(value, '[\\"]', '\\%0') .. '"'
end
