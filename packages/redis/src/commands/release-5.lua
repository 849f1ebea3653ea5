--[[
  Ends a holder's turn in one command: removes the holder (and its creation claim), writes the manifest
  and counters, applies stateIfLast when no live holder remains, refreshes the TTL, and tells whether the
  caller was the last live holder. A lapsed lease still records the turn, and the checkpoint asked for (see
  release-4.lua). Refuses a corrupt record or checkpoints without writing anything.

  This variant also moves the session up in its tenant's listing index, in the same script: only for a
  single Redis node (or Sentinel), where the index may share a script with the session's keys. On a Cluster
  the store runs release-4 and index-touch-1 side by side instead.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal    KEYS[4] checkpoints    KEYS[5] tenant index

  ARGV[1..19] as in release-4.lua
  ARGV[20] index member (the conversation hash)
  ARGV[21] index score (the turn end)

  Returns as release-4.lua
]]
--- @include "session"
--- @include "index"
--- @include "checkpoints"
--- @include "release"

local reply = release_turn({ KEYS[1], KEYS[2], KEYS[3], KEYS[4] })
-- A session without a record (its creator released without creating) is not listed.
if reply[1] == 'ok' and #reply[3] > 0 then touch_index(KEYS[5], ARGV[20], ARGV[21]) end
return reply
