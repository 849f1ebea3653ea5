--[[
  Restores a session to a checkpoint of its tree in one step, without a lease of the caller's: refused, with
  nothing written, while any live holder or hold exists, when the record does not map the expected sandbox,
  or when the target is not a kept checkpoint of this session (by id, on any branch; or the head's ancestor
  at a depth; or the root). Takes the next fencing token (as acquire would), so a turn that began before and
  lost its lease can neither map a sandbox, append to the journal nor record a checkpoint afterwards. Moves
  the head to the target and drops the entries recorded since the old head (the target's branch journal is
  its path in the tree); deletes no checkpoint. Writes turnCount (the target's turn), its manifest, no
  sandbox, state 'unknown', the pending restore and the new token as mappingToken. Refreshes the session
  TTL. Refuses a corrupt record or checkpoint tree without writing anything.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal    KEYS[4] checkpoints

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] 'id': ARGV[4] is a checkpoint id ('' = the root); 'turn': ARGV[4] is a depth (0 = the root)
  ARGV[4] the target
  ARGV[5] the sandbox id the caller saw mapped, '' for none
  ARGV[6] session TTL, ms

  Returns { 'ok', record values in FIELDS order, the checkpoint restored { id, first field, snapshot JSON
            or nil, manifest JSON or nil } (empty for the root) }
       or { 'busy', ms until the longest live lease lapses } while a turn (or a hold) holds the session
       or { 'mismatch', the sandbox id mapped ('' none) }
       or { 'missing', kept checkpoints, the head's turn, 'pruned' or 'unknown' } (or there is no record)
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "checkpoints"

local status, record = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
local nodes, ids = tree_nodes(KEYS[4])
if not nodes then return { 'corrupt', 4 } end
local now = store_now()
local holders, count, _, counter = live_holders(KEYS[2], now)
if not holders then return { 'corrupt', 2 } end
if count > 0 then
  local longest = 0
  for _, holder in pairs(holders) do
    if holder[1] - now > longest then longest = holder[1] - now end
  end
  return { 'busy', longest }
end
local current = ''
if record and record[F_SANDBOX] then current = record[F_SANDBOX] end
if current ~= ARGV[5] then return { 'mismatch', current } end

local kept = 0
for i = 1, #ids do
  if nodes[ids[i]].kept then kept = kept + 1 end
end
local head = head_of(record, nodes, ids)
if head == nil then return { 'corrupt', 1 } end
local depth = record and tonumber(record[F_TURNS]) or 0

local target, why = find_target(nodes, head, KEYS[4], ARGV[3], ARGV[4])
-- Without a record no turn ever ended: there is nothing to go back to, not even the root.
if not record or target == nil then return { 'missing', kept, depth, why } end

local reply = {}
if target then
  reply = read_checkpoint(KEYS[4], target.id)
  if not reply then return { 'corrupt', 4 } end
end
local length = redis.pcall('LLEN', KEYS[3])
if type(length) ~= 'number' then return { 'corrupt', 3 } end

-- A token of its own, as acquire issues one (never at or below the mapping's).
local token = counter
if tonumber(record[F_TOKEN]) > token then token = tonumber(record[F_TOKEN]) end
token = token + 1
redis.call('HSET', KEYS[2], 'token', token)
-- The entries since the old head are not on the target's branch.
if length > 0 then redis.call('DEL', KEYS[3]) end
redis.call('HDEL', KEYS[2], 'jbytes')

local snapshot = 'null'
if target and reply[3] then snapshot = reply[3] end
local turn = 0
if target then turn = target.turn end
local checkpoint_id = 'null'
if target then checkpoint_id = '"' .. target.id .. '"' end
record[F_RESTORE] = '{"kind":"rewound","turn":' .. integer(turn) .. ',"checkpointId":' .. checkpoint_id
  .. ',"snapshot":' .. snapshot .. ',"fromSandboxId":' .. json_string(record[F_SANDBOX]) .. ',"at":'
  .. integer(now) .. '}'
record[F_TURNS] = integer(turn)
record[F_MANIFEST] = target and reply[4]
record[F_SANDBOX] = false
record[F_STATE] = 'unknown'
record[F_PAUSED_AT] = false
record[F_TOKEN] = integer(token)
record[F_UPDATED] = integer(now)
record[F_HEAD] = target and target.id or ''
save_fields(KEYS[1], record, { F_RESTORE, F_TURNS, F_MANIFEST, F_SANDBOX, F_STATE, F_PAUSED_AT, F_TOKEN, F_UPDATED,
  F_HEAD })
refresh(KEYS, tonumber(ARGV[6]))
return { 'ok', record, reply }
