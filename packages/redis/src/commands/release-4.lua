--[[
  Ends a holder's turn in one command: removes the holder (and its creation claim), writes the manifest
  and counters, applies stateIfLast when no live holder remains, refreshes the TTL, and tells whether the
  caller was the last live holder. A lapsed lease still records the turn. Refuses a corrupt record without
  writing anything.

  This variant also moves the session up in its tenant's listing index, in the same script: only for a
  single Redis node (or Sentinel), where the index may share a script with the session's keys. On a Cluster
  the store runs release-3 and index-touch-1 side by side instead.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal (TTL only)    KEYS[4] tenant index

  ARGV[1..15] as in release-3.lua
  ARGV[16] index member (the conversation hash)
  ARGV[17] index score (the turn end)

  Returns { 'ok', last (0|1), record values in FIELDS order (empty when none), held (0|1) }
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "index"
--- @include "release"

local reply = release_turn(KEYS[1], KEYS[2], KEYS[3])
-- A session without a record (its creator released without creating) is not listed.
if reply[1] == 'ok' and #reply[3] > 0 then touch_index(KEYS[4], ARGV[16], ARGV[17]) end
return reply
