--[[
  Ends the hold a release with holdIfLast kept (the caller's pause is done): removes the hold and its
  holder, so that acquire lets other turns in again. A no-op when the hold lapsed or is another holder's.

  KEYS[1] lease

  ARGV[1] holder id
  ARGV[2] fencing token of the lease

  Returns 1 when the hold was ended, 0 when there was none of this holder's.
]]
local field = 'h:' .. ARGV[1]
-- Both fields in one read: the hold's holder, and that holder's lease.
local read = redis.call('HMGET', KEYS[1], 'hold', field)
if read[1] ~= ARGV[1] then return 0 end
local value = read[2]
if value and string.match(value, '^%d+:(%d+):') == ARGV[2] then
  redis.call('HDEL', KEYS[1], 'hold', field)
else
  redis.call('HDEL', KEYS[1], 'hold')
end
return 1
