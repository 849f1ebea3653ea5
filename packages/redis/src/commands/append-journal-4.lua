--[[
  Appends a setup step to the session's journal unless that would pass the step-count or byte limit (then
  nothing is stored), fenced by the turn's lease when one is given: refused unless that holder is live with
  that token and the token is at least the record's mappingToken (a restore after the turn began took a
  higher one). The limits count the head's whole branch: its path in the checkpoint tree and the entries
  since. Refreshes the session TTL.

  KEYS[1] record (head, mappingToken; TTL)    KEYS[2] lease (holders; the open entries' byte count)
  KEYS[3] journal (the entries since the head)    KEYS[4] checkpoints (the head's path length)

  ARGV[1] step JSON
  ARGV[2] most steps
  ARGV[3] most bytes (of the stored entries)
  ARGV[4] session TTL, ms
  ARGV[5] holder id of the lease that fences the write, '' for none
  ARGV[6] its fencing token

  Returns { 'ok', recordedAt } or { 'full', steps now, bytes now } or { 'lost', why }
       or { 'corrupt', index in KEYS }
]]
--- @include "session"
--- @include "checkpoints"

local now = store_now()
local lease_kind = redis.call('TYPE', KEYS[2])['ok']
if lease_kind ~= 'none' and lease_kind ~= 'hash' then
  return { 'corrupt', 2 }
end
local fields = redis.pcall('HMGET', KEYS[1], 'head', 'mappingToken')
if fields.err then return { 'corrupt', 1 } end
if ARGV[5] ~= '' then
  local value = redis.call('HGET', KEYS[2], 'h:' .. ARGV[5])
  local expires_at, token
  if value then expires_at, token = string.match(value, '^(%d+):(%d+):') end
  if not expires_at or tonumber(expires_at) <= now or tonumber(token) ~= tonumber(ARGV[6]) then
    return { 'lost', 'it lapsed or the holder was removed before the journal step was written' }
  end
  if fields[2] and tonumber(fields[2]) and tonumber(ARGV[6]) < tonumber(fields[2]) then
    return { 'lost', 'fencing token ' .. ARGV[6] .. ' is older than ' .. fields[2] }
  end
end

-- The head's path: its entries and bytes count towards the limits.
local base_steps, base_bytes = 0, 0
local head = fields[1]
if head and head ~= '' then
  local node = parse_meta(redis.call('HGET', KEYS[4], head))
  if not node then return { 'corrupt', 4 } end
  base_steps, base_bytes = node.length, node.bytes
end
local steps = redis.pcall('LLEN', KEYS[3])
if type(steps) ~= 'number' then return { 'corrupt', 3 } end
local bytes = 0
if steps > 0 then
  local stored = redis.pcall('HGET', KEYS[2], 'jbytes')
  if type(stored) == 'table' and stored.err then return { 'corrupt', 2 } end
  bytes = tonumber(stored)
  if not bytes then
    -- The count went missing: recount once from the entries themselves.
    bytes = 0
    for _, entry in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do bytes = bytes + #entry end
  end
end
local entry = '{"recordedAt":' .. string.format('%d', now) .. ',"step":' .. ARGV[1] .. '}'
if base_steps + steps + 1 > tonumber(ARGV[2]) or base_bytes + bytes + #entry > tonumber(ARGV[3]) then
  return { 'full', base_steps + steps, base_bytes + bytes }
end
redis.call('RPUSH', KEYS[3], entry)
redis.call('HSET', KEYS[2], 'jbytes', bytes + #entry)
refresh(KEYS, tonumber(ARGV[4]))
return { 'ok', now }
