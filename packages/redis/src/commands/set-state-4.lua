--[[
  Records the sandbox state (a pause outside release, or a failed one) and refreshes the session TTL.

  KEYS[1] record    KEYS[2] lease (TTL only)    KEYS[3] journal (TTL only)    KEYS[4] checkpoints (TTL only)

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] state
  ARGV[4] when it happened, epoch ms ('' = store clock now); becomes pausedAt for 'paused'
  ARGV[5] session TTL, ms

  Returns { 'ok', record values in FIELDS order } or { 'none' } or { 'corrupt', 1 }
]]
--- @include "session"

local status, record = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
if status == 'none' then return { 'none' } end
local now = store_now()
apply_state(record, ARGV[3], tonumber(ARGV[4]) or now)
record[F_UPDATED] = integer(now)
save_fields(KEYS[1], record, { F_STATE, F_PAUSED_AT, F_UPDATED })
refresh(KEYS, tonumber(ARGV[5]))
return { 'ok', record }
