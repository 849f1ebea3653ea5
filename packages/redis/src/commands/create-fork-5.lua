--[[
  Creates a fork's new session in one step (see create-fork-4.lua), and lists it in its tenant's index
  (score: the store clock), in the same script: only for a single Redis node (or Sentinel). On a Cluster the
  store runs create-fork-4, then index-touch-1.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal    KEYS[4] checkpoints    KEYS[5] tenant index

  ARGV[1..11+n] as in create-fork-4.lua
  ARGV[12+n] index member (the conversation hash)

  Returns as create-fork-4.lua
]]
--- @include "session"
--- @include "index"
--- @include "create-fork"

local reply = create_fork({ KEYS[1], KEYS[2], KEYS[3], KEYS[4] })
if reply[1] == 'ok' then touch_index(KEYS[5], ARGV[#ARGV], reply[2][8]) end
return reply
