--[[
  Reads the session's journal: the head's branch (the journal parts along its path in the checkpoint tree,
  root first) and the entries recorded since the head, in one atomic step.

  KEYS[1] record (its head)    KEYS[2] journal    KEYS[3] checkpoints

  Returns { 'ok', the parts (each entries joined by '\n'), the entries since the head }
       or { 'corrupt', index in KEYS of the bad key }
]]
--- @include "session"
--- @include "checkpoints"

local head = redis.pcall('HGET', KEYS[1], 'head')
if type(head) == 'table' and head.err then return { 'corrupt', 1 } end
local segments = {}
if head and head ~= '' then
  local nodes = tree_nodes(KEYS[3])
  if not nodes or not nodes[head] then return { 'corrupt', 3 } end
  segments = path_segments(KEYS[3], nodes, head)
end
local open = redis.pcall('LRANGE', KEYS[2], 0, -1)
if open.err then return { 'corrupt', 2 } end
return { 'ok', as_reply(segments), open }
