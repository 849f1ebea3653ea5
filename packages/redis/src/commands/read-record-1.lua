--[[
  Reads and checks a record (the same checks every writing script makes).

  KEYS[1] record

  ARGV[1] tenant
  ARGV[2] conversation id, or '' when only the hash is known (listing)

  Returns { 'ok', record values in FIELDS order } or { 'none' } or { 'corrupt', 1 }
]]
--- @include "session"

local status, record = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
if status == 'none' then return { 'none' } end
return { 'ok', record }
