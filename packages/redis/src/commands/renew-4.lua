--[[
  Extends a live lease to now + leaseMs and refreshes the session TTL.

  KEYS[1] record (TTL only)    KEYS[2] lease    KEYS[3] journal (TTL only)    KEYS[4] checkpoints (TTL only)

  ARGV[1] holder id
  ARGV[2] fencing token of the lease
  ARGV[3] lease length, ms
  ARGV[4] session TTL, ms

  Returns { 'ok', new expiresAt } or { 'lost' } when the lease lapsed or the holder was removed,
       or { 'corrupt', 2 } when the lease key is not a hash.
]]
--- @include "session"

local holder_id, token, lease_ms, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if ttl < lease_ms then ttl = lease_ms end
local now = store_now()
local holders = live_holders(KEYS[2], now)
if not holders then return { 'corrupt', 2 } end
local holder = holders[holder_id]
if not holder or holder[2] ~= token then return { 'lost' } end
local expires_at = now + lease_ms
redis.call('HSET', KEYS[2], 'h:' .. holder_id, holder_value(expires_at, token, holder[3]))
refresh(KEYS, ttl)
return { 'ok', expires_at }
