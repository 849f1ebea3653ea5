--[[
  Moves a session up in its tenant's listing index (never down), and keeps the index alive at least as long
  as the session. The index lives in another slot than the session, so this runs as its own command.

  KEYS[1] tenant index (sorted set: member = conversation hash, score = last activity, epoch ms)

  ARGV[1] member
  ARGV[2] score
  ARGV[3] TTL, ms

  Returns 1
]]
local current = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not current or tonumber(current) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
