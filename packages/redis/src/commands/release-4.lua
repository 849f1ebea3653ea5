--[[
  Ends a holder's turn in one round trip: removes the holder (and its creation claim) or, when asked and it
  is the last, keeps it as the session's hold (acquire refuses others until release-hold), writes the manifest
  and counters, applies stateIfLast when no live holder remains, refreshes the TTL, and tells whether the
  caller was the last live holder. A lapsed lease still records the turn. With a checkpoint asked for, also
  records it in the same step as the head's child and the new head (its turn: the new turnCount; its
  journal part: the entries recorded since the head; its manifest: the record's) unless the record no
  longer maps its sandbox or a higher token mapped since the turn began (then refused); retention then keeps
  the newest `keep` and the head (includes/checkpoints.lua). Refuses a corrupt record or checkpoint tree
  without writing anything.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal    KEYS[4] checkpoints

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] holder id
  ARGV[4] fencing token of the lease
  ARGV[5] manifest JSON, 'null' to clear it, '' to keep the stored one
  ARGV[6] sandbox id the manifest describes ('' when none); written only when it is the mapped one
  ARGV[7] turn end, epoch ms
  ARGV[8] seconds to add to runningSeconds
  ARGV[9] seconds to add to pausedSeconds
  ARGV[10] state to record if last, '' to leave it
  ARGV[11] session TTL, ms
  ARGV[12] turn count the manifest is conditional on ('' none): written only if the record's count is still it
  ARGV[13] when this turn started the sandbox running, epoch ms ('' never): the last holder of overlapping
           turns adds the time from their earliest start to its turn end to runningSeconds
  ARGV[14] whether the turn used the sandbox ('1' | '0'; '' leaves lastTurnUsedSandbox)
  ARGV[15] '1' to keep the lease as the session's hold when the caller is the last live holder, else ''
  ARGV[16] the sandbox the checkpoint's snapshot is of; '' records no checkpoint
  ARGV[17] the checkpoint's snapshot JSON, '' for none
  ARGV[18] checkpoints to keep, this one included
  ARGV[19] the new checkpoint's id (random, made by the client)

  Returns { 'ok', last (0|1), record values in FIELDS order (empty when none), held (0|1),
            checkpoint (0 none asked for | 1 recorded | 2 refused),
            the checkpoint recorded { id, first field, snapshot, manifest } (empty unless recorded), the
            checkpoints pruned in that form, oldest first }
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "checkpoints"
--- @include "release"

return release_turn(KEYS)
