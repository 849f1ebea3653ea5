--[[
  Appends a setup step to the session's journal unless that would pass the step-count or byte limit (then
  nothing is stored). Refreshes the session TTL.

  KEYS[1] record (TTL only)    KEYS[2] lease (holds the journal's byte count)    KEYS[3] journal
  KEYS[4] checkpoints (TTL only)

  ARGV[1] step JSON
  ARGV[2] most steps
  ARGV[3] most bytes (of the stored entries)
  ARGV[4] session TTL, ms

  Returns { 'ok', recordedAt } or { 'full', steps now, bytes now } or { 'corrupt', index in KEYS }
]]
--- @include "session"

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
local now = store_now()
local entry = '{"recordedAt":' .. string.format('%d', now) .. ',"step":' .. ARGV[1] .. '}'
if steps + 1 > tonumber(ARGV[2]) or bytes + #entry > tonumber(ARGV[3]) then
  return { 'full', steps, bytes }
end
local lease_kind = redis.call('TYPE', KEYS[2])['ok']
if lease_kind ~= 'none' and lease_kind ~= 'hash' then
  return { 'corrupt', 2 }
end
redis.call('RPUSH', KEYS[3], entry)
redis.call('HSET', KEYS[2], 'jbytes', bytes + #entry)
refresh(KEYS, tonumber(ARGV[4]))
return { 'ok', now }
