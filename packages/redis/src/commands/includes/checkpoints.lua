-- A session's checkpoint tree (inlined where a script says `--- @include "checkpoints"`, after "session").
-- One hash per session (in the session's slot), four fields per node id C ('ck_' + 22 base64url chars):
--   C           '<seq>:<createdAt>:<journalLength>:<pathBytes>:<turn>:<parentId or ->:<k|b>:<e|m>:<sandboxId>'
--               seq: creation order; journalLength/pathBytes: the entries (and their bytes) on the path from
--               the root, C's own included; k = kept (restorable), b = bare (pruned, but a kept node descends
--               from it); e = taken at a turn's end, m = mid-turn
--   C:snapshot  the snapshot's JSON as the client sent it (absent: null; a bare node has none)
--   C:manifest  the manifest's JSON (absent: null; a bare node has none)
--   C:journal   the journal entries recorded between the parent and C, joined by '\n' (absent: none). A
--               branch's journal is the concatenation along its path: branches share their common prefix.
-- and two fields for the tree itself:
--   seq         the last creation number
--   pruned      the ids of pruned nodes that are gone, concatenated (25 characters each), newest last, at
--               most MAX_PRUNED of them: a restore to one says it was pruned rather than unknown
-- The record's `head` field names the node the session continues from ('' = the root); the journal list
-- holds the entries recorded since the head (its byte count: the lease hash's `jbytes`).
-- Scripts move the JSON parts as text, so no JSON is built or parsed here (an in-memory engine has no
-- cjson); the client reads them back strictly (checkpoint-fields.ts). Fields of the turn-keyed layout of
-- earlier versions ('1', '1:snapshot', ...) are left alone and never read.

local MAX_PRUNED = 1000
local ID_LENGTH = 25

-- A node's first field, parsed; nil when it is not one a script writes.
local function parse_meta(text)
  if type(text) ~= 'string' then return nil end
  local seq, created, length, bytes, turn, parent, kept, from, sandbox =
    string.match(text, '^(%d+):(%d+):(%d+):(%d+):(%d+):([%w_-]+):([kb]):([em]):(.+)$')
  if not seq or not is_count(seq) or not is_count(created) or not is_count(length) or not is_count(bytes)
    or not is_count(turn) or not printable_or_null(sandbox, 256) then
    return nil
  end
  if parent ~= '-' and not is_checkpoint_id(parent) then return nil end
  return { seq = tonumber(seq), created = created, length = tonumber(length), bytes = tonumber(bytes),
    turn = tonumber(turn), parent = parent ~= '-' and parent or false, kept = kept == 'k', from = from,
    sandbox = sandbox }
end

local function meta_text(node)
  return integer(node.seq) .. ':' .. node.created .. ':' .. integer(node.length) .. ':' .. integer(node.bytes)
    .. ':' .. integer(node.turn) .. ':' .. (node.parent or '-') .. ':' .. (node.kept and 'k' or 'b') .. ':'
    .. node.from .. ':' .. node.sandbox
end

-- The tree's nodes (id -> node, each with its `id`), their ids in creation order, and the last seq; nil
-- when the key is not a hash or a node's first field is damaged (the caller refuses as corrupt before
-- writing anything).
local function tree_nodes(key)
  local fields = redis.pcall('HKEYS', key)
  if fields.err then return nil end
  local ids = {}
  for i = 1, #fields do
    local field = fields[i]
    if #field == ID_LENGTH and string.sub(field, 1, 3) == 'ck_' then ids[#ids + 1] = field end
  end
  local nodes, seq = {}, 0
  if #ids > 0 then
    local metas = redis.call('HMGET', key, unpack(ids))
    for i = 1, #ids do
      local node = parse_meta(metas[i])
      if not node or not is_checkpoint_id(ids[i]) then return nil end
      node.id = ids[i]
      nodes[ids[i]] = node
    end
  end
  for _, node in pairs(nodes) do
    if node.parent and not nodes[node.parent] then return nil end
  end
  table.sort(ids, function(a, b) return nodes[a].seq < nodes[b].seq end)
  local stored = redis.call('HGET', key, 'seq')
  if stored then
    if not is_count(stored) then return nil end
    seq = tonumber(stored)
  end
  return nodes, ids, seq
end

-- The record's head node (false: the root); a record from before checkpoint trees (no head field)
-- continues from its newest kept node. nil when the head names no node (the caller refuses as corrupt).
local function head_of(record, nodes, ids)
  local head = record and record[F_HEAD]
  if head == '' then return false end
  if head then
    if not nodes[head] then return nil end
    return head
  end
  for i = #ids, 1, -1 do
    if nodes[ids[i]].kept then return ids[i] end
  end
  return false
end

-- One kept node as a reply { id, first field, snapshot JSON or false, manifest JSON or false }, its parts
-- checked; nil when one is damaged.
local function read_checkpoint(key, id)
  local values = redis.call('HMGET', key, id, id .. ':snapshot', id .. ':manifest')
  if not parse_meta(values[1]) then return nil end
  if values[2] and not snapshot_ok(values[2]) then return nil end
  if values[3] and not manifest_ok(values[3]) then return nil end
  return { id, values[1], values[2], values[3] }
end

-- The kept nodes of `ids` as replies, in that order; nil when one is damaged.
local function read_checkpoints(key, ids)
  local replies = {}
  for i = 1, #ids do
    local reply = read_checkpoint(key, ids[i])
    if not reply then return nil end
    replies[#replies + 1] = reply
  end
  return replies
end

-- Whether `id` was pruned away (remembered in the `pruned` field).
local function was_pruned(key, id)
  local pruned = redis.call('HGET', key, 'pruned')
  if not pruned then return false end
  for at = 1, #pruned, ID_LENGTH do
    if string.sub(pruned, at, at + ID_LENGTH - 1) == id then return true end
  end
  return false
end

-- The journal parts along the path from the root to `id` (false: the root, none), root first.
local function path_segments(key, nodes, id)
  local ids = {}
  while id do
    ids[#ids + 1] = id .. ':journal'
    id = nodes[id].parent
  end
  if #ids == 0 then return {} end
  local parts = redis.call('HMGET', key, unpack(ids))
  local segments = {}
  for i = #ids, 1, -1 do
    if parts[i] and parts[i] ~= '' then segments[#segments + 1] = parts[i] end
  end
  return segments
end

-- The head's ancestor (or the head) at depth `turn`: the deepest node of that turn on the head's path (a
-- turn's end rather than its mid-turn checkpoints). Returns the node, or 'pruned' (it is bare), or nil.
local function ancestor_at(nodes, head, turn)
  local id = head
  while id do
    local node = nodes[id]
    if node.turn == turn then
      if node.kept then return node end
      return 'pruned'
    end
    if node.turn < turn then return nil end
    id = node.parent
  end
  return nil
end

-- The checkpoint a restore, rewind or fork names: `mode` 'head' (the head), 'id' (`value` a checkpoint id, ''
-- for the root) or a turn (`value` a depth on the head's path, 0 for the root). Returns the node, false for the
-- root, or nil with why ('pruned' or 'unknown') when the session keeps no such checkpoint.
local function find_target(nodes, head, pruned_key, mode, value)
  if mode == 'head' then
    if head then return nodes[head], 'unknown' end
    return false, 'unknown'
  end
  if mode == 'id' then
    if value == '' then return false, 'unknown' end
    local node = nodes[value]
    if node and node.kept then return node, 'unknown' end
    if node or was_pruned(pruned_key, value) then return nil, 'pruned' end
    return nil, 'unknown'
  end
  local turn = tonumber(value)
  if turn <= 0 then return false, 'unknown' end
  local target = ancestor_at(nodes, head, turn)
  if target == 'pruned' then return nil, 'pruned' end
  return target, 'unknown'
end

-- Retention after a new node: the newest `keep` kept nodes and the head stay kept; the others become bare
-- (snapshot and manifest dropped), and every node no kept one descends from is deleted with its journal
-- part and remembered as pruned. Returns the replies of the nodes pruned now (read before their parts go),
-- oldest first; nil when one is damaged.
local function apply_retention(key, nodes, ids, head, keep)
  local kept = {}
  for i = 1, #ids do
    if nodes[ids[i]].kept then kept[#kept + 1] = ids[i] end
  end
  local pruned_ids = {}
  for i = 1, #kept - keep do
    if kept[i] ~= head then pruned_ids[#pruned_ids + 1] = kept[i] end
  end
  local pruned = read_checkpoints(key, pruned_ids)
  if not pruned then return nil end
  for i = 1, #pruned_ids do
    local node = nodes[pruned_ids[i]]
    node.kept = false
    redis.call('HSET', key, node.id, meta_text(node))
    redis.call('HDEL', key, node.id .. ':snapshot', node.id .. ':manifest')
  end
  local needed = {}
  for i = 1, #ids do
    local id = ids[i]
    if nodes[id].kept then
      while id and not needed[id] do
        needed[id] = true
        id = nodes[id].parent
      end
    end
  end
  local gone = {}
  for i = 1, #ids do
    local id = ids[i]
    if not needed[id] then
      redis.call('HDEL', key, id, id .. ':snapshot', id .. ':manifest', id .. ':journal')
      nodes[id] = nil
      gone[#gone + 1] = id
    end
  end
  -- A bare node whose only child is bare too is folded into that child (its journal part prepended, the
  -- child re-parented), so a long conversation keeps one bare node per chain rather than one per pruned
  -- turn: the scripts' reads of the tree stay bounded by the kept nodes and the branch points.
  local children, child_of = {}, {}
  for _, node in pairs(nodes) do
    if node.parent then
      children[node.parent] = (children[node.parent] or 0) + 1
      child_of[node.parent] = node.id
    end
  end
  for i = 1, #ids do
    local id = ids[i]
    local node = nodes[id]
    local only = child_of[id]
    if node and not node.kept and children[id] == 1 and not nodes[only].kept then
      local child = nodes[only]
      local parts = redis.call('HMGET', key, id .. ':journal', only .. ':journal')
      local joined = parts[1] or ''
      if parts[2] and parts[2] ~= '' then
        joined = joined == '' and parts[2] or (joined .. '\n' .. parts[2])
      end
      child.parent = node.parent
      if joined ~= '' then redis.call('HSET', key, only .. ':journal', joined) end
      redis.call('HSET', key, only, meta_text(child))
      redis.call('HDEL', key, id, id .. ':journal')
      nodes[id] = nil
      gone[#gone + 1] = id
    end
  end
  if #gone > 0 then
    local remembered = (redis.call('HGET', key, 'pruned') or '') .. table.concat(gone)
    local most = MAX_PRUNED * ID_LENGTH
    if #remembered > most then remembered = string.sub(remembered, #remembered - most + 1) end
    redis.call('HSET', key, 'pruned', remembered)
  end
  return pruned
end

-- Adds a node as the child of the record's head and makes it the head: the journal entries recorded since
-- the head become its journal part (the list is emptied), then retention runs. `spec` = { id, created,
-- turn, from ('e'|'m'), sandbox, snapshot (JSON or ''), manifest (JSON or false), keep }. `keys` =
-- { record, lease, journal, checkpoints }. Writes the record's head (only that field). Returns the node's
-- reply and the pruned ones; nil, index in KEYS when a key is damaged; or 'exists' when the id is taken.
local function add_checkpoint(keys, record, nodes, ids, seq, spec)
  if nodes[spec.id] then return 'exists' end
  local parent = head_of(record, nodes, ids)
  if parent == nil then return nil, 1 end
  local length = redis.pcall('LLEN', keys[3])
  if type(length) ~= 'number' then return nil, 3 end
  local open_bytes = 0
  local segment = ''
  if length > 0 then
    local entries = redis.call('LRANGE', keys[3], 0, -1)
    segment = table.concat(entries, '\n')
    for i = 1, #entries do open_bytes = open_bytes + #entries[i] end
  end
  local base_length, base_bytes = 0, 0
  if parent then base_length, base_bytes = nodes[parent].length, nodes[parent].bytes end
  local node = { id = spec.id, seq = seq + 1, created = integer(spec.created), length = base_length + length,
    bytes = base_bytes + open_bytes, turn = spec.turn, parent = parent, kept = true, from = spec.from,
    sandbox = spec.sandbox }
  local meta = meta_text(node)
  local fields = { node.id, meta, 'seq', integer(node.seq) }
  if spec.snapshot ~= '' then
    fields[#fields + 1] = node.id .. ':snapshot'
    fields[#fields + 1] = spec.snapshot
  end
  if spec.manifest then
    fields[#fields + 1] = node.id .. ':manifest'
    fields[#fields + 1] = spec.manifest
  end
  if segment ~= '' then
    fields[#fields + 1] = node.id .. ':journal'
    fields[#fields + 1] = segment
  end
  redis.call('HSET', keys[4], unpack(fields))
  if length > 0 then
    redis.call('DEL', keys[3])
    redis.call('HDEL', keys[2], 'jbytes')
  end
  redis.call('HSET', keys[2], 'cp', '1')
  nodes[node.id] = node
  ids[#ids + 1] = node.id
  record[F_HEAD] = node.id
  save_fields(keys[1], record, { F_HEAD })
  local pruned = apply_retention(keys[4], nodes, ids, node.id, spec.keep)
  if not pruned then return nil, 4 end
  return { node.id, meta, spec.snapshot ~= '' and spec.snapshot, spec.manifest }, pruned
end

-- A list built in order, as a reply: copied from the end, the order ioredis-mock's engine needs to hand
-- a table back as an array (real Redis takes either).
local function as_reply(list)
  local reply = {}
  for i = #list, 1, -1 do reply[i] = list[i] end
  return reply
end

-- A sandbox id (printable, checked by load_record) as a JSON string: only `"` and `\` need escaping.
local function json_string(value)
  if not value then return 'null' end
  return '"' .. string.gsub(value, '[\\"]', '\\%0') .. '"'
end
