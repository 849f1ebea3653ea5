--[[
  For a holder waiting on another's creation: returns the mapping when it exists, or hands this holder the
  creation claim when nobody live holds it (the claimant's lease lapsed, or it released without creating).

  KEYS[1] record    KEYS[2] lease

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] holder id
  ARGV[4] fencing token of the lease

  Returns { 'ok', record values in FIELDS order (empty when none), create (0|1) }
       or { 'lost' } when this holder's own lease lapsed
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"

local status, record = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
local holder_id, token = ARGV[3], tonumber(ARGV[4])
local now = store_now()
local holders, _, claim = live_holders(KEYS[2], now)
if not holders then return { 'corrupt', 2 } end
local holder = holders[holder_id]
if not holder or holder[2] ~= token then return { 'lost' } end
local fields = record or {}
if record and record[F_SANDBOX] then return { 'ok', fields, 0 } end
if not claim or claim == holder_id then
  redis.call('HSET', KEYS[2], 'claim', holder_id)
  return { 'ok', fields, 1 }
end
return { 'ok', fields, 0 }
