--[[
  Reads a session's checkpoint tree as stored, less the nodes' journal parts (the client checks the rest
  strictly and lists the kept nodes).

  KEYS[1] checkpoints

  Returns { 'ok', flat field/value list (empty when there are none) } or { 'corrupt', 1 } when the key is
  not a hash.
]]
local fields = redis.pcall('HKEYS', KEYS[1])
if fields.err then return { 'corrupt', 1 } end
local wanted = {}
for i = 1, #fields do
  if string.sub(fields[i], -8) ~= ':journal' then wanted[#wanted + 1] = fields[i] end
end
if #wanted == 0 then return { 'ok', {} } end
local values = redis.call('HMGET', KEYS[1], unpack(wanted))
-- Filled from the end: the order ioredis-mock's engine needs to hand a table back as an array.
local flat = {}
for i = #wanted, 1, -1 do
  flat[2 * i] = values[i]
  flat[2 * i - 1] = wanted[i]
end
return { 'ok', flat }
