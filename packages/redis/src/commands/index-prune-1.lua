--[[
  Removes listing entries whose session is gone (expired or deleted), but only when their score is still the
  one the caller saw: a session touched meanwhile stays listed.

  KEYS[1] tenant index

  ARGV[1], ARGV[2], ... pairs of member and the score seen

  Returns the number of entries removed
]]
local removed = 0
for i = 1, #ARGV, 2 do
  local current = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if current and tonumber(current) == tonumber(ARGV[i + 1]) then
    redis.call('ZREM', KEYS[1], ARGV[i])
    removed = removed + 1
  end
end
return removed
