--[[
  Reads the store clock: the Redis server's time in epoch ms, the clock every other script uses for leases
  and timestamps (store_now in includes/session.lua), so that callers date things on one clock shared by
  every process rather than on their own.

  KEYS[1] <prefix>:clock, never read or written: it routes every reading to the same node of a Cluster, so
          that successive readings come from one clock

  No ARGV.

  Returns the time in epoch ms (an integer).
]]
--- @include "session"

return store_now()
