-- The tenant listing index (inlined by the loader where a script says `--- @include "index"`).
--
-- The index has no TTL on purpose: `gc` treats a sandbox whose session is not listed as orphaned, so the
-- index must never vanish while a session lives. Entries of sessions that expired or were deleted are
-- removed by listing as it meets them (index-prune-1).

-- Moves a session up in its tenant's index, never down (turn ends may arrive out of order).
-- ZADD GT (Redis 6.2+) does it in one command; older servers refuse the flag and take two.
local function touch_index(key, member, score)
  local added = redis.pcall('ZADD', key, 'GT', score, member)
  if type(added) == 'table' and added.err then
    -- A wrong key type raises here, as it would have without the GT attempt.
    local current = redis.call('ZSCORE', key, member)
    if not current or tonumber(current) < tonumber(score) then
      redis.call('ZADD', key, score, member)
    end
  end
end
