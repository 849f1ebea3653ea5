-- The tenant listing index (inlined by the loader where a script says `--- @include "index"`).

-- Moves a session up in its tenant's index (never down) and keeps the index alive at least `ttl` ms.
local function touch_index(key, member, score, ttl)
  local current = redis.call('ZSCORE', key, member)
  if not current or tonumber(current) < tonumber(score) then
    redis.call('ZADD', key, score, member)
  end
  if redis.call('PTTL', key) < tonumber(ttl) then
    redis.call('PEXPIRE', key, ttl)
  end
end
