--[[
  Records a checkpoint while a turn runs (turn.checkpoint()), fenced by the turn's lease: refused unless
  the holder is live with that token, the token is at least the record's mappingToken and the record maps
  the sandbox the snapshot is of. The checkpoint is the head's child and the new head; the entries recorded
  since the head become its journal part; its turn is the turn under way (turnCount + 1); retention runs as
  at a turn's end. Refuses a corrupt record or tree without writing anything.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal    KEYS[4] checkpoints

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] holder id
  ARGV[4] fencing token of the lease
  ARGV[5] the new checkpoint's id (random, made by the client)
  ARGV[6] the sandbox the snapshot is of
  ARGV[7] the snapshot JSON, '' for none
  ARGV[8] the manifest JSON, '' for none
  ARGV[9] checkpoints to keep, this one included

  Returns { 'ok', the checkpoint { id, first field, snapshot, manifest }, the checkpoints pruned, oldest
            first } or { 'lost', why } or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "checkpoints"

local status, record = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
local nodes, ids, seq = tree_nodes(KEYS[4])
if not nodes then return { 'corrupt', 4 } end
local now = store_now()
local holders = live_holders(KEYS[2], now)
if not holders then return { 'corrupt', 2 } end
local holder, token = holders[ARGV[3]], tonumber(ARGV[4])
if not holder or holder[2] ~= token then return { 'lost', 'it lapsed before the checkpoint was recorded' } end
if not record or token < tonumber(record[F_TOKEN]) or record[F_SANDBOX] ~= ARGV[6] then
  return { 'lost', 'a restore came after this turn began, or the session maps another sandbox' }
end
local checkpoint, pruned = add_checkpoint(KEYS, record, nodes, ids, seq, { id = ARGV[5], created = now,
  turn = tonumber(record[F_TURNS]) + 1, from = 'm', sandbox = ARGV[6], snapshot = ARGV[7],
  manifest = ARGV[8] ~= '' and ARGV[8], keep = tonumber(ARGV[9]) })
if checkpoint == 'exists' then return { 'lost', 'the checkpoint id is taken; take the checkpoint again' } end
if not checkpoint then return { 'corrupt', pruned } end
record[F_UPDATED] = integer(now)
save_fields(KEYS[1], record, { F_UPDATED })
return { 'ok', checkpoint, as_reply(pruned) }
