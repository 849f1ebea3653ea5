--[[
  Moves a session up in its tenant's listing index (never down). On a Cluster the index lives in another
  slot than the session, so this runs as its own command next to the session's script. The index has no
  TTL (see includes/index.lua).

  KEYS[1] tenant index (sorted set: member = conversation hash, score = last activity, epoch ms)

  ARGV[1] member
  ARGV[2] score

  Returns 1
]]
--- @include "index"

touch_index(KEYS[1], ARGV[1], ARGV[2])
return 1
