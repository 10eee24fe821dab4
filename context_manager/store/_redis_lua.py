"""The Redis backend's Lua scripts, run by the sync and the async store alike
(``redis.py``, ``redis_async.py``): each write is one script, so Redis runs it atomically."""

import hashlib

# Every script starts with GENERATION: a stored number that names a key or drives a loop (the gen
# key, a checkpoint's position) is read through ``checked``, so one that an edit or damage left as
# ``0.5``, ``abc``, ``1e12`` or a list is reported ({'damaged', key}: StoreCorruptionError)
# instead of naming another key (g:0.5: an empty history that conflicts forever) or looping (to
# 1e12: the whole server stalls, BUSY for every client). At most 14 digits: Lua prints bigger
# numbers in exponent form, so g:<N> would name another key.
GENERATION = """
local function checked(raw)
  if type(raw) == 'string' and #raw <= 14 and string.match(raw, '^%d+$') then
    return tonumber(raw)
  end
  return false
end
local function generation(base)
  local raw = redis.pcall('GET', base .. 'gen')
  if not raw then return 0 end
  return checked(raw)
end
"""

# Each script is declared with one key, ``<prefix>{<session>}:gen`` (KEYS[1]), and touches only
# keys with the session's hash tag, so on Redis Cluster it runs on the node that owns the
# session's slot; the sessions index (another slot) is written apart (:meth:`_indexed`).
# ARGV[1] is the key prefix ``<prefix>{<session>}:``; APPEND and ROTATE do not read ARGV[2], [3].
# Every script reads the session's epoch: a random value drawn when the session's keys are
# created (ARGV new_epoch), so a session that expired (ttl) and was rebuilt to the same
# generation and position has another one and a stale writer's view cannot match it again (ABA).
# A view read while the session did not exist (epoch '') matches it only while it is still empty.
# With a ttl, APPEND and ROTATE renew the session's offload keys (``off:data``, ``off:live``,
# ``off:keys``, see offload_redis.py) with its own, when they exist: the history names their
# handles, so a session kept alive by writes must not lose the results its stubs point to.

# ARGV: base, index, session, expect_gen ('' = blind), expect_pos, ttl, now, mode,
# expect_epoch, new_epoch, first record id ('' = none), then (body, checkpoint id or '') pairs.
# Returns {status, generation, next position, checkpoint id, epoch}: status 1 written, 0 stale
# view (nothing written), 2 the first id is already stored (a retry: nothing written).
APPEND = (
    GENERATION
    + """
local base = ARGV[1]
local gen = generation(base)
if not gen then return {'damaged', base .. 'gen'} end
local epoch = redis.call('GET', base .. 'epoch')
local list = base .. 'g:' .. gen
local ck = base .. 'ck:' .. gen
local ids = base .. 'id:' .. gen
local len = redis.call('LLEN', list)
local count = (#ARGV - 11) / 2
if ARGV[11] ~= '' then
  local at = redis.call('HGET', ids, ARGV[11])
  if at then return {2, gen, tonumber(at) + count, -1, epoch or ''} end
end
if ARGV[4] ~= '' then
  local same = tonumber(ARGV[4]) == gen and tonumber(ARGV[5]) == len
  if ARGV[9] ~= (epoch or '') and not (ARGV[9] == '' and gen == 0 and len == 0) then
    same = false
  end
  if not same then return {0, gen, len, -1, epoch or ''} end
end
if not epoch then epoch = ARGV[10] end
local pos = len
local made = -1
if ARGV[8] == 'checkpoint' then
  made = tonumber(redis.call('HGET', ck, 'next') or '0')
  redis.call('RPUSH', list, '{"role": "_checkpoint", "id": ' .. made .. '}')
  redis.call('HSET', ck, tostring(made), pos, 'next', made + 1)
  pos = pos + 1
else
  if ARGV[11] ~= '' then redis.call('HSET', ids, ARGV[11], pos) end
  local bodies = {}
  for i = 12, #ARGV, 2 do
    bodies[#bodies + 1] = ARGV[i]
    if ARGV[i + 1] ~= '' then
      local id = tonumber(ARGV[i + 1])
      redis.call('HSET', ck, ARGV[i + 1], pos)
      if id + 1 > tonumber(redis.call('HGET', ck, 'next') or '0') then
        redis.call('HSET', ck, 'next', id + 1)
      end
    end
    pos = pos + 1
  end
  for j = 1, #bodies, 1000 do
    redis.call('RPUSH', list, unpack(bodies, j, math.min(j + 999, #bodies)))
  end
end
redis.call('SET', base .. 'gen', gen)
redis.call('SET', base .. 'epoch', epoch)
local ttl = tonumber(ARGV[6])
if ttl > 0 then
  for _, key in ipairs({base .. 'gen', base .. 'epoch', list, ck, ids, base .. 'off:data',
                        base .. 'off:live', base .. 'off:keys'}) do
    if redis.call('EXISTS', key) == 1 then redis.call('EXPIRE', key, ttl) end
  end
end
return {1, gen, pos, made, epoch}
"""
)

# ARGV: base, index, session, checkpoint id ('' = clear), ttl, now, new_epoch.
# Returns {ok, new generation, next position, checkpoints in the old generation, epoch}.
ROTATE = (
    GENERATION
    + """
local base = ARGV[1]
local gen = generation(base)
if not gen then return {'damaged', base .. 'gen'} end
local epoch = redis.call('GET', base .. 'epoch') or ARGV[7]
local list = base .. 'g:' .. gen
local ck = base .. 'ck:' .. gen
local ids = base .. 'id:' .. gen
local ng = gen + 1
local nlist = base .. 'g:' .. ng
local nck = base .. 'ck:' .. ng
local nids = base .. 'id:' .. ng
local cut = 0
if ARGV[4] ~= '' then
  local found = redis.call('HGET', ck, ARGV[4])
  if not found then
    return {0, gen, 0, tonumber(redis.call('HGET', ck, 'next') or '0'), epoch}
  end
  cut = checked(found)
  if not cut or cut > redis.call('LLEN', list) then return {'damaged', ck} end
  local i = 0
  while i < cut do
    local items = redis.call('LRANGE', list, i, math.min(i + 999, cut - 1))
    redis.call('RPUSH', nlist, unpack(items))
    i = i + 1000
  end
  local all = redis.call('HGETALL', ck)
  for k = 1, #all, 2 do
    if all[k] ~= 'next' and tonumber(all[k + 1]) < cut then
      redis.call('HSET', nck, all[k], all[k + 1])
    end
  end
  redis.call('HSET', nck, 'next', ARGV[4])
  local known = redis.call('HGETALL', ids)
  for k = 1, #known, 2 do
    if tonumber(known[k + 1]) < cut then redis.call('HSET', nids, known[k], known[k + 1]) end
  end
end
redis.call('SET', base .. 'gen', ng)
redis.call('SET', base .. 'epoch', epoch)
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  for _, key in ipairs({base .. 'gen', base .. 'epoch', nlist, nck, nids, list, ck, ids,
                        base .. 'off:data', base .. 'off:live', base .. 'off:keys'}) do
    if redis.call('EXISTS', key) == 1 then redis.call('EXPIRE', key, ttl) end
  end
end
return {1, ng, cut, 0, epoch}
"""
)

# ARGV: base, start. Returns {generation, length, epoch, lines...}.
LOAD = (
    GENERATION
    + """
local base = ARGV[1]
local gen = generation(base)
if not gen then return {'damaged', base .. 'gen'} end
local list = base .. 'g:' .. gen
local out = {gen, redis.call('LLEN', list), redis.call('GET', base .. 'epoch') or ''}
for _, item in ipairs(redis.call('LRANGE', list, tonumber(ARGV[2]), -1)) do
  out[#out + 1] = item
end
return out
"""
)

# ARGV: base, the gen key's value read before the scan ('' = none), then every key of the session
# the scan found. Deletes them, the fixed keys (gen, epoch; the offload keys ``off:data``,
# ``off:live``, ``off:keys``, see offload_redis.py) and the generations made since the scan
# began (from the gen read before it to the current one). So the work is bounded by the keys
# that exist: looping 0..gen let one damaged gen (3000000) stall the server. A session whose gen
# moved by more than 1000 meanwhile returns {'changed'} with nothing deleted. Returns how many
# keys existed. The sessions index (another slot) is updated apart; a stale writer's view then
# conflicts (no epoch any more: a rebuilt session draws a new one).
DELETE = (
    GENERATION
    + """
local base = ARGV[1]
local keys = {base .. 'gen', base .. 'epoch', base .. 'off:data', base .. 'off:live',
              base .. 'off:keys'}
for i = 3, #ARGV do keys[#keys + 1] = ARGV[i] end
local gen = generation(base)
if gen then
  local from = checked(ARGV[2]) or 0
  if from > gen then from = 0 end
  if gen - from > 1000 then return {'changed'} end
  for g = from, gen do
    keys[#keys + 1] = base .. 'g:' .. g
    keys[#keys + 1] = base .. 'ck:' .. g
    keys[#keys + 1] = base .. 'id:' .. g
  end
end
local n = 0
for j = 1, #keys, 1000 do
  n = n + redis.call('DEL', unpack(keys, j, math.min(j + 999, #keys)))
end
return n
"""
)

SCRIPTS = {"append": APPEND, "rotate": ROTATE, "load": LOAD, "delete": DELETE}
# What the server files each script under (SHA-1 of its text; the scripts are ASCII, so every
# client encoding sends the same bytes).
SHAS = {name: hashlib.sha1(lua.encode()).hexdigest() for name, lua in SCRIPTS.items()}
