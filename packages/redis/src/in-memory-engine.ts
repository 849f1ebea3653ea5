// ioredis-mock runs scripts in fengari (Lua 5.3 in JavaScript) with a `redis.call` that hands JavaScript
// values to Lua as they are. The store's scripts are written for Redis' Lua 5.1 and its conversions, so
// for such a client each script is run behind this prelude, which makes the calls answer as Redis does.
// Measured with ioredis-mock 8.13 (what users unit-test with); without it every script refused the session
// as corrupt:
//   - array replies (HMGET, HGETALL, TIME, LRANGE) are JavaScript arrays (Lua userdata), a missing field a
//     JavaScript null (userdata, truthy) rather than false;
//   - `redis.pcall` answers an error as a ['error', message] array instead of a table with `err`;
//   - TYPE answers a bare string instead of a status table { ok = type };
//   - numeric arguments arrive as Lua floats instead of strings;
//   - fengari's integers are 32-bit, so the store clock in ms (TIME * 1000, about 1.8e12) wrapped around
//     and string.format('%d', ms) failed ("number has no integer representation"): numbers are kept as
//     doubles (exact to 2^53) and '%d' is written with '%.0f';
//   - a table filled 1..n by assignment comes back to JavaScript as null, not as an array;
//   - TIME answers Math.round(now / 1000) seconds and the sub-second part of process.hrtime() as its
//     microseconds, so the store clock jumped back by up to a second between two calls (a later turn
//     "started" before an earlier one): the prelude answers TIME from a clock that never goes back and
//     counts microseconds, the wall time read once when this module loads plus Node's monotonic
//     process.uptime() since (fengari's os.clock() under Node). Before, it answered os.time(), whole
//     seconds, and a lease could end up to a second early;
//   - `cjson` is missing, and ZADD's GT flag is refused (the scripts' fallback covers that once pcall
//     reports the error as Redis does).
// Real Redis never sees this prelude: it would refuse the global writes (and need none of it).

// The store clock's origin in seconds: the wall time at which process.uptime() read 0. Read once, so the
// clock (this plus os.clock()) moves only with the monotonic uptime, whatever the wall clock does after.
const CLOCK_ORIGIN_S = (Date.now() / 1000 - process.uptime()).toFixed(6)

/** Lua run before each script on an in-memory client (ioredis-mock). */
export const IN_MEMORY_PRELUDE = `
local sandkeep_call, sandkeep_pcall = redis.call, redis.pcall
local sandkeep_tonumber, sandkeep_format = tonumber, string.format
-- TIME as Redis answers it, { seconds, microseconds }, from a clock that never goes back.
local function sandkeep_time()
  local now = ${CLOCK_ORIGIN_S} + os.clock()
  local seconds = math.floor(now)
  return { sandkeep_format('%.0f', seconds), sandkeep_format('%.0f', math.floor((now - seconds) * 1000000)) }
end
tonumber = function(...)
  local number = sandkeep_tonumber(...)
  if number then return number + 0.0 end
  return number
end
string.format = function(pattern, ...)
  if not string.find(pattern, '%d', 1, true) then return sandkeep_format(pattern, ...) end
  return sandkeep_format((string.gsub(pattern, '%%d', '%%.0f')), ...)
end
-- An array reply as a Lua table of strings, with false for a missing value, as Redis gives it.
local function sandkeep_reply(value)
  if type(value) ~= 'userdata' then return value end
  local out = {}
  -- Filled from the end: ioredis-mock turns a returned table into an array only when its keys come out
  -- (lua_next) last to first, which fengari gives in reverse order of insertion.
  for i = #value, 1, -1 do
    local item = value[i]
    if type(item) == 'number' then
      item = sandkeep_format('%.17g', item)
    elseif type(item) ~= 'string' then
      item = false
    end
    out[i] = item
  end
  return out
end
local function sandkeep_status(name, value)
  if type(value) == 'string' and string.upper(name) == 'TYPE' then return { ok = value } end
  return value
end
redis.call = function(name, ...)
  if string.upper(name) == 'TIME' then return sandkeep_time() end
  return sandkeep_status(name, sandkeep_reply(sandkeep_call(name, ...)))
end
redis.pcall = function(name, ...)
  local value = sandkeep_pcall(name, ...)
  if type(value) == 'userdata' and value[0] == 'error' then return { err = tostring(value[1]) } end
  return sandkeep_status(name, sandkeep_reply(value))
end
for i = 1, #ARGV do
  if type(ARGV[i]) == 'number' then ARGV[i] = sandkeep_format('%.17g', ARGV[i]) end
end
-- Only what the scripts ask of cjson: whether a stored manifest is a JSON object or array. This checks the
-- outer brackets, not the whole grammar nor the manifest's shape (outline_only tells the scripts so); the
-- store writes manifests with JSON.stringify, and the client checks the shape of what it reads.
if cjson == nil then
  cjson = {
    null = {},
    outline_only = true,
    decode = function(text)
      if type(text) == 'string' and (string.match(text, '^%s*{.*}%s*$') or string.match(text, '^%s*%[.*%]%s*$')) then
        return {}
      end
      error('not JSON')
    end,
  }
end
`

/**
 * Whether `client` is an in-memory stand-in for Redis (ioredis-mock): it has no connection `status`, and
 * runs scripts in its own Lua engine, which needs {@link IN_MEMORY_PRELUDE}.
 */
export function isInMemoryClient(client: object): boolean {
  return (client as { status?: unknown }).status === undefined
}
