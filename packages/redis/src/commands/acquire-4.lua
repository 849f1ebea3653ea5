--[[
  Begins a turn in one round trip: prunes lapsed holders, adds this holder, issues the next fencing token,
  reads the record (stamping lastTurnStartedAt), grants the creation claim when no sandbox is mapped and no
  live holder holds the claim, and refreshes the session TTL. Refuses a corrupt record without writing.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal (TTL only)    KEYS[4] checkpoints (TTL only)

  ARGV[1] tenant
  ARGV[2] conversation id (checked against the record)
  ARGV[3] holder id
  ARGV[4] lease length, ms
  ARGV[5] session TTL, ms

  Returns { 'ok', record values in FIELDS order (empty when none), create (0|1), live holders, fencing token,
    expiresAt }
       or { 'held', ms until the hold lapses } while another holder's release holds the session (nothing
          written but the pruning of lapsed holders)
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"

local status, record, digest = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
local holder_id, lease_ms, ttl = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
-- The session must outlive the lease it grants, even with a TTL shorter than the lease.
if ttl < lease_ms then ttl = lease_ms end
local now = store_now()
local holders, count, claim, counter, has_journal, run_from, hold, has_checkpoints = live_holders(KEYS[2], now)
if not holders then return { 'corrupt', 2 } end
if hold and hold ~= holder_id then return { 'held', holders[hold][1] - now } end
-- A new run of overlapping turns: forget the start of a previous one whose last holder never released.
if count == 0 and run_from then redis.call('HDEL', KEYS[2], 'run_from') end

-- Never issue a token at or below the mapping's, even if the counter was lost.
local token = counter
if record and tonumber(record[F_TOKEN]) > token then token = tonumber(record[F_TOKEN]) end
token = token + 1
local expires_at = now + lease_ms
if not holders[holder_id] then count = count + 1 end

local create = 0
if (not record or not record[F_SANDBOX]) and (not claim or claim == holder_id) then
  create = 1
  redis.call('HSET', KEYS[2], 'token', token, 'h:' .. holder_id, holder_value(expires_at, token, now),
    'claim', holder_id)
else
  redis.call('HSET', KEYS[2], 'token', token, 'h:' .. holder_id, holder_value(expires_at, token, now))
end

if record then
  record[F_STARTED] = integer(now)
  record[F_UPDATED] = record[F_STARTED]
  if digest then
    -- The manifest was checked in full: the next load need only hash it.
    redis.call('HSET', KEYS[1], 'lastTurnStartedAt', record[F_STARTED], 'updatedAt', record[F_STARTED],
      'checked', digest)
  else
    redis.call('HSET', KEYS[1], 'lastTurnStartedAt', record[F_STARTED], 'updatedAt', record[F_STARTED])
  end
end
refresh_session(KEYS, has_journal, has_checkpoints, ttl)
return { 'ok', record or {}, create, count, token, expires_at }
