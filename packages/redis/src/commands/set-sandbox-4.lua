--[[
  Compare-and-set of the mapping, fenced: refused unless the lease is live, its token is at least the
  record's mappingToken and the mapped sandbox id equals the expected one. Creates the record on first
  creation, releases the creation claim and refreshes the session TTL.

  This variant also lists the session in its tenant's index (score: the store clock), in the same script:
  only for a single Redis node (or Sentinel). On a Cluster the store runs set-sandbox-3 and index-touch-1
  side by side instead.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal (TTL only)    KEYS[4] tenant index

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] holder id
  ARGV[4] fencing token of the lease
  ARGV[5] new sandbox id
  ARGV[6] expected sandbox id, '' for none
  ARGV[7] provider id
  ARGV[8] template as JSON (a string or null), '' to keep the stored one
  ARGV[9] state to record
  ARGV[10] session TTL, ms
  ARGV[11] index member (the conversation hash)
  ARGV[12] index TTL, ms

  Returns { 'ok', core JSON, manifest JSON }
       or { 'lost', reason ('lapsed' | 'stale-token' | 'mismatch'), detail }
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "index"
--- @include "set-sandbox"

local reply = set_sandbox(KEYS[1], KEYS[2], KEYS[3])
if reply[1] == 'ok' then
  touch_index(KEYS[4], ARGV[11], string.format('%d', cjson.decode(reply[2]).updatedAt), ARGV[12])
end
return reply
