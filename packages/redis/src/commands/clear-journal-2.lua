--[[
  Empties the session's journal and its byte count.

  KEYS[1] lease    KEYS[2] journal

  Returns { 'ok' } or { 'corrupt', 1 } when the lease key is not a hash.
]]
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'hash' then
  return { 'corrupt', 1 }
end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[1], 'jbytes')
return { 'ok' }
