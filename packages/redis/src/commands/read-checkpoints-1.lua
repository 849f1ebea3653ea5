--[[
  Reads a session's checkpoints as stored (the client checks them strictly).

  KEYS[1] checkpoints

  Returns { 'ok', flat field/value list (empty when there are none) } or { 'corrupt', 1 } when the key is
  not a hash.
]]
local flat = redis.pcall('HGETALL', KEYS[1])
if flat.err then return { 'corrupt', 1 } end
return { 'ok', flat }
