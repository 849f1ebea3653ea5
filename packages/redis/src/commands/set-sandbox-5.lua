--[[
  Compare-and-set of the mapping, fenced: refused unless the lease is live, its token is at least the
  record's mappingToken and the mapped sandbox id equals the expected one. Creates the record on first
  creation, releases the creation claim, clears a pending restore and refreshes the session TTL.

  This variant also lists the session in its tenant's index (score: the store clock), in the same script:
  only for a single Redis node (or Sentinel). On a Cluster the store runs set-sandbox-4 and index-touch-1
  side by side instead.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal (TTL only)    KEYS[4] checkpoints (TTL only)
  KEYS[5] tenant index

  ARGV[1..11] as in set-sandbox-4.lua
  ARGV[12] index member (the conversation hash)

  Returns { 'ok', record values in FIELDS order, updatedAt }
       or { 'lost', reason ('lapsed' | 'stale-token' | 'mismatch'), detail }
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "index"
--- @include "set-sandbox"

local reply = set_sandbox(KEYS[1], KEYS[2], KEYS[3], KEYS[4])
if reply[1] == 'ok' then touch_index(KEYS[5], ARGV[12], reply[3]) end
return reply
