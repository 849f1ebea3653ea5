--[[
  Compare-and-set of the mapping, fenced: refused unless the lease is live, its token is at least the
  record's mappingToken and the mapped sandbox id equals the expected one. Creates the record on first
  creation, releases the creation claim, clears a pending restore (the new sandbox carried it out) and
  refreshes the session TTL.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal (TTL only)    KEYS[4] checkpoints (TTL only)

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] holder id
  ARGV[4] fencing token of the lease
  ARGV[5] new sandbox id
  ARGV[6] expected sandbox id, '' for none
  ARGV[7] provider id
  ARGV[8] template: 'set' (ARGV[9]), 'null', or 'keep' the stored one
  ARGV[9] template name when ARGV[8] is 'set'
  ARGV[10] state to record
  ARGV[11] session TTL, ms

  Returns { 'ok', record values in FIELDS order, updatedAt }
       or { 'lost', reason ('lapsed' | 'stale-token' | 'mismatch'), detail }
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "set-sandbox"

return set_sandbox(KEYS[1], KEYS[2], KEYS[3], KEYS[4])
