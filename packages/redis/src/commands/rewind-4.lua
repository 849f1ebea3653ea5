--[[
  Sets a session back to the end of turn `toTurn` in one step, without a lease of the caller's: refused,
  with nothing written, while any live holder or hold exists, when the record does not map the expected
  sandbox, or when `toTurn` is neither 0 nor a kept checkpoint's turn. Takes the next fencing token (as
  acquire would), so a turn that began before and lost its lease can neither map a sandbox nor record a
  checkpoint afterwards. Cuts the journal (and its byte count) back to the checkpoint's length, drops later
  checkpoints, and writes turnCount, the checkpoint's manifest, no sandbox, state 'unknown', the pending
  restore and the new token as mappingToken. Refreshes the session TTL. Refuses a corrupt record or
  checkpoints without writing anything.

  KEYS[1] record    KEYS[2] lease    KEYS[3] journal    KEYS[4] checkpoints

  ARGV[1] tenant
  ARGV[2] conversation id
  ARGV[3] the turn to go back to (0 = before the first turn)
  ARGV[4] the sandbox id the caller saw mapped, '' for none
  ARGV[5] session TTL, ms

  Returns { 'ok', record values in FIELDS order, the checkpoint gone back to (empty for turn 0), the
            checkpoints dropped, oldest first } (checkpoints as { turn, '<createdAt>:<journalLength>:<sandboxId>',
            snapshot JSON or nil, manifest JSON or nil })
       or { 'busy', ms until the longest live lease lapses } while a turn (or a hold) holds the session
       or { 'mismatch', the sandbox id mapped ('' none) }
       or { 'missing', kept turns } when `toTurn` has no checkpoint (or there is no record)
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "checkpoints"

local status, record = load_record(KEYS[1], ARGV[1], ARGV[2])
if status == 'corrupt' then return { 'corrupt', 1 } end
local turns = checkpoint_turns(KEYS[4])
if not turns then return { 'corrupt', 4 } end
local to_turn = tonumber(ARGV[3])
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
if current ~= ARGV[4] then return { 'mismatch', current } end

local kept, later = {}, {}
local found = to_turn == 0
for i = 1, #turns do
  if turns[i] == to_turn then found = true end
  if turns[i] <= to_turn then kept[#kept + 1] = turns[i] else later[#later + 1] = turns[i] end
end
-- Without a record no turn ever ended: there is nothing to go back to, not even turn 0.
if not record or not found then
  local listed = {}
  for i = 1, #turns do listed[i] = integer(turns[i]) end
  return { 'missing', as_reply(listed) }
end
local target = {}
if to_turn > 0 then
  target = read_checkpoint(KEYS[4], to_turn)
  if not target then return { 'corrupt', 4 } end
end
local dropped = read_checkpoints(KEYS[4], later)
if not dropped then return { 'corrupt', 4 } end
local length = redis.pcall('LLEN', KEYS[3])
if type(length) ~= 'number' then return { 'corrupt', 3 } end

-- A token of its own, as acquire issues one (never at or below the mapping's).
local token = counter
if tonumber(record[F_TOKEN]) > token then token = tonumber(record[F_TOKEN]) end
token = token + 1
redis.call('HSET', KEYS[2], 'token', token)

-- The journal as it was at the checkpoint, and its byte count with it (append-journal counts on it).
local keep_steps = 0
if to_turn > 0 then keep_steps = tonumber(string.match(target[2], '^%d+:(%d+):')) end
if length > keep_steps then
  if keep_steps == 0 then
    redis.call('DEL', KEYS[3])
    redis.call('HDEL', KEYS[2], 'jbytes')
  else
    redis.call('LTRIM', KEYS[3], 0, keep_steps - 1)
    local bytes = 0
    for _, entry in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do bytes = bytes + #entry end
    redis.call('HSET', KEYS[2], 'jbytes', bytes)
  end
end
for i = 1, #later do drop_checkpoint(KEYS[4], later[i]) end
if #kept == 0 then redis.call('HDEL', KEYS[2], 'cp') end

local snapshot = 'null'
if to_turn > 0 and target[3] then snapshot = target[3] end
record[F_RESTORE] = '{"kind":"rewound","turn":' .. integer(to_turn) .. ',"snapshot":' .. snapshot
  .. ',"fromSandboxId":' .. json_string(record[F_SANDBOX]) .. ',"at":' .. integer(now) .. '}'
record[F_TURNS] = integer(to_turn)
record[F_MANIFEST] = to_turn > 0 and target[4]
record[F_SANDBOX] = false
record[F_STATE] = 'unknown'
record[F_PAUSED_AT] = false
record[F_TOKEN] = integer(token)
record[F_UPDATED] = integer(now)
save_fields(KEYS[1], record, { F_RESTORE, F_TURNS, F_MANIFEST, F_SANDBOX, F_STATE, F_PAUSED_AT, F_TOKEN, F_UPDATED })
refresh(KEYS, tonumber(ARGV[5]))
return { 'ok', record, target, as_reply(dropped) }
