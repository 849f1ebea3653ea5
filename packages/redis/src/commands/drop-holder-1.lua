--[[
  Removes one holder that its caller gave up on: an acquire whose reply did not come in time may still run
  when Redis answers again, and its holder must not count as a live turn (it would keep the sandbox from
  being paused until its lease lapsed). Sent on the same connection right after the timed-out acquire, so
  Redis runs it after that acquire, whenever that runs. Leaves the token counter as it is.

  KEYS[1] lease

  ARGV[1] holder id

  Returns the number of fields removed (0 when the acquire never ran).
]]
local field = 'h:' .. ARGV[1]
local removed = redis.call('HDEL', KEYS[1], field)
if redis.call('HGET', KEYS[1], 'claim') == ARGV[1] then
  removed = removed + redis.call('HDEL', KEYS[1], 'claim')
end
return removed
