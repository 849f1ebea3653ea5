--[[
  Reads, in one atomic step, what a fork copies: the record, a checkpoint of the tree and that checkpoint's
  branch journal (the journal parts along its path, root first). A fork never reads the checkpoint of one
  branch with the journal of another, whatever restore or turn of the source runs meanwhile.

  KEYS[1] record    KEYS[2] lease (unused, for the KEYS layout)    KEYS[3] journal (unused)
  KEYS[4] checkpoints

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] 'head' (the session's head), 'id' (ARGV[4] a checkpoint id, '' = the root) or 'turn' (ARGV[4] a
          depth on the head's path, 0 = the root)
  ARGV[4] the target

  Returns { 'ok', record values in FIELDS order, the checkpoint { id, first field, snapshot, manifest }
            (empty for the root), the journal parts }
       or { 'missing', kept checkpoints, the head's turn, 'pruned' or 'unknown' } (also without a record)
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "checkpoints"

local status, record = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
local nodes, ids = tree_nodes(KEYS[4])
if not nodes then return { 'corrupt', 4 } end
local kept = 0
for i = 1, #ids do
  if nodes[ids[i]].kept then kept = kept + 1 end
end
if not record then return { 'missing', kept, 0, 'unknown' } end
local head = head_of(record, nodes, ids)
if head == nil then return { 'corrupt', 1 } end
local depth = tonumber(record[F_TURNS])

local target, why = find_target(nodes, head, KEYS[4], ARGV[3], ARGV[4])
if target == nil then return { 'missing', kept, depth, why } end
local reply, segments = {}, {}
if target then
  reply = read_checkpoint(KEYS[4], target.id)
  if not reply then return { 'corrupt', 4 } end
  segments = path_segments(KEYS[4], nodes, target.id)
end
return { 'ok', record, reply, as_reply(segments) }
