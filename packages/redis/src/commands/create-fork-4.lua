--[[
  Creates a fork's new session in one step: refused, writing nothing, when the key has a record or live
  holders, or when the journal passes the step-count or byte limit. Writes the record (no sandbox, the
  checkpoint's turn and manifest, state 'unknown', the pending restore dated by the store clock), the journal
  (recorded now) and no checkpoints, and sets the session TTL. The source session lives in another slot: the
  caller read it first, and passes what the fork takes.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal    KEYS[4] checkpoints

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] provider id, '' for none
  ARGV[4] template, '' for none
  ARGV[5] the checkpoint's turn
  ARGV[6] the checkpoint's manifest JSON, '' for none
  ARGV[7] the restore's JSON object without `at` (the script adds it)
  ARGV[8] most journal steps
  ARGV[9] most journal bytes (of the stored entries)
  ARGV[10] session TTL, ms
  ARGV[11] number of journal steps n
  ARGV[12..11+n] the steps' JSON, in order

  Returns { 'ok', record values in FIELDS order }
       or { 'exists' } when the session has a record or live holders
       or { 'full', steps, bytes } when the journal passes a limit
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "create-fork"

return create_fork(KEYS)
