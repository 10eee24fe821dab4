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
local function keep_set(key, value)
  local left = redis.call('PTTL', key)
  redis.call('SET', key, value)
  if left > 0 then redis.call('PEXPIRE', key, left) end
end
local function follow_ttl(base, keys)
  local left = redis.call('PTTL', base .. 'gen')
  if left > 0 then
    for _, key in ipairs(keys) do
      if redis.call('PTTL', key) == -1 then redis.call('PEXPIRE', key, left) end
    end
  end
end
"""

# ``keep_set`` sets the gen and epoch keys keeping their time to live, and ``follow_ttl`` gives
# the keys a writer without a ttl made the session's: it must not make some of the session's
# keys outlive the others (a session rebuilt on a surviving epoch would match a stale
# writer's view again; records in keys that never expire would be stranded).

# Whether a generation's running sums (``s:<N>``, ``m:<N>``) cover its ``len`` records: a list
# of another length, or a key of another type (an edit, damage), does not.
SUMS = """
local function sums_hold(slist, mlist, len)
  local n, m = redis.pcall('LLEN', slist), redis.pcall('LLEN', mlist)
  return type(n) == 'number' and n == len and type(m) == 'number'
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

# Beside each generation's list ``g:<N>``, ``s:<N>`` holds each record's running sums as the
# writer computed them (``_redis_tail.continued``: what an open reads instead of the older
# records) and ``m:<N>`` each record that is no message as its position, its sums and its
# line, one per line (an open reads them in one LRANGE: a LINDEX per record walks the list).
# The sums hold only while ``s:<N>`` is as long as ``g:<N>``: a write whose view the script did
# not check (blind) pushes none, so the generation's sums stay short and every open reads it
# whole.

# ARGV: base, index, session, expect_gen ('' = blind), expect_pos, ttl, now, mode,
# expect_epoch, new_epoch, first record id ('' = none), then (body, checkpoint id or '', sums)
# triples; a checkpoint's ARGV[12] is its sums. Returns {status, generation, next position,
# checkpoint id, epoch}: status 1 written, 0 stale view (nothing written), 2 the first id is
# already stored (a retry: nothing written). A sums text starting with "m" marks a record that
# is no message.
APPEND = (
    GENERATION
    + SUMS
    + """
local base = ARGV[1]
local gen = generation(base)
if not gen then return {'damaged', base .. 'gen'} end
local epoch = redis.call('GET', base .. 'epoch')
local list = base .. 'g:' .. gen
local ck = base .. 'ck:' .. gen
local ids = base .. 'id:' .. gen
local slist = base .. 's:' .. gen
local mlist = base .. 'm:' .. gen
local len = redis.call('LLEN', list)
local count = (#ARGV - 11) / 3
if ARGV[11] ~= '' then
  local at = checked(redis.call('HGET', ids, ARGV[11]))
  if at then  -- with the sums after the stored batch: the writer's head is there now
    local held = false
    if at + count > 0 and sums_hold(slist, mlist, len) then
      held = redis.call('LINDEX', slist, at + count - 1)
    end
    return {2, gen, at + count, -1, epoch or '', held}
  end
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
-- An empty generation starts its sums afresh; sums that stopped covering the records never
-- hold again (records removed, then as many written, would leave them shifted).
local sums = len == 0 or sums_hold(slist, mlist, len)
if len == 0 or not sums then redis.call('DEL', slist, mlist) end
sums = sums and ARGV[4] ~= ''
if ARGV[8] == 'checkpoint' then
  made = tonumber(redis.call('HGET', ck, 'next') or '0')
  local line = '{"role": "_checkpoint", "id": ' .. made .. '}'
  redis.call('RPUSH', list, line)
  redis.call('HSET', ck, tostring(made), pos, 'next', made + 1)
  if sums then
    redis.call('RPUSH', slist, ARGV[12])
    if string.byte(ARGV[12], 1) == 109 then
      redis.call('RPUSH', mlist, pos .. '\\n' .. ARGV[12] .. '\\n' .. line)
    end
  end
  pos = pos + 1
else
  if ARGV[11] ~= '' then redis.call('HSET', ids, ARGV[11], pos) end
  local bodies, running, metas = {}, {}, {}
  for i = 12, #ARGV, 3 do
    bodies[#bodies + 1] = ARGV[i]
    running[#running + 1] = ARGV[i + 2]
    if string.byte(ARGV[i + 2], 1) == 109 then
      metas[#metas + 1] = pos .. '\\n' .. ARGV[i + 2] .. '\\n' .. ARGV[i]
    end
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
    if sums then
      redis.call('RPUSH', slist, unpack(running, j, math.min(j + 999, #running)))
    end
  end
  for j = 1, #metas, 1000 do
    if sums then redis.call('RPUSH', mlist, unpack(metas, j, math.min(j + 999, #metas))) end
  end
end
keep_set(base .. 'gen', gen)
keep_set(base .. 'epoch', epoch)
local ttl = tonumber(ARGV[6])
if ttl > 0 then
  for _, key in ipairs({base .. 'gen', base .. 'epoch', list, ck, ids, slist, mlist,
                        base .. 'off:data', base .. 'off:live', base .. 'off:keys'}) do
    if redis.call('EXISTS', key) == 1 then redis.call('EXPIRE', key, ttl) end
  end
else
  follow_ttl(base, {list, ck, ids, slist, mlist})
end
return {1, gen, pos, made, epoch}
"""
)

# ARGV: base, index, session, checkpoint id ('' = clear), ttl, now, new_epoch.
# Returns {ok, new generation, next position, checkpoints in the old generation, epoch, the
# running sums of the last record kept (false: none kept, or the old generation's sums did not
# hold)}; the new generation keeps the sums and ``m:<N>`` entries of the records it keeps.
ROTATE = (
    GENERATION
    + SUMS
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
local slist = base .. 's:' .. gen
local mlist = base .. 'm:' .. gen
local nslist = base .. 's:' .. ng
local nmlist = base .. 'm:' .. ng
local cut = 0
local sums = false
-- the new generation starts empty (keys a writer without a ttl left behind are stale)
redis.call('DEL', nlist, nck, nids, nslist, nmlist)
if ARGV[4] ~= '' then
  local found = redis.call('HGET', ck, ARGV[4])
  if not found then
    return {0, gen, 0, tonumber(redis.call('HGET', ck, 'next') or '0'), epoch}
  end
  cut = checked(found)
  local len = redis.call('LLEN', list)
  if not cut or cut > len then return {'damaged', ck} end
  local valid = sums_hold(slist, mlist, len)
  local i = 0
  while i < cut do
    local items = redis.call('LRANGE', list, i, math.min(i + 999, cut - 1))
    redis.call('RPUSH', nlist, unpack(items))
    if valid then
      local part = redis.call('LRANGE', slist, i, math.min(i + 999, cut - 1))
      redis.call('RPUSH', nslist, unpack(part))
    end
    i = i + 1000
  end
  if valid and cut > 0 then
    sums = redis.call('LINDEX', slist, cut - 1)
    local kept = {}
    for _, entry in ipairs(redis.call('LRANGE', mlist, 0, -1)) do
      local n = checked(string.match(entry, '^(%d+)\\n'))
      if n and n < cut then kept[#kept + 1] = entry end
    end
    for j = 1, #kept, 1000 do
      redis.call('RPUSH', nmlist, unpack(kept, j, math.min(j + 999, #kept)))
    end
  end
  local all = redis.call('HGETALL', ck)
  for k = 1, #all, 2 do
    local at = checked(all[k + 1])
    if all[k] ~= 'next' and at and at < cut then
      redis.call('HSET', nck, all[k], all[k + 1])
    end
  end
  redis.call('HSET', nck, 'next', ARGV[4])
  local known = redis.call('HGETALL', ids)
  for k = 1, #known, 2 do
    local at = checked(known[k + 1])
    if at and at < cut then redis.call('HSET', nids, known[k], known[k + 1]) end
  end
end
keep_set(base .. 'gen', ng)
keep_set(base .. 'epoch', epoch)
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  for _, key in ipairs({base .. 'gen', base .. 'epoch', nlist, nck, nids, nslist, nmlist, list,
                        ck, ids, slist, mlist, base .. 'off:data', base .. 'off:live',
                        base .. 'off:keys'}) do
    if redis.call('EXISTS', key) == 1 then redis.call('EXPIRE', key, ttl) end
  end
else
  follow_ttl(base, {nlist, nck, nids, nslist, nmlist})
end
return {1, ng, cut, 0, epoch, sums}
"""
)

# ARGV: base, start (below 0: that many from the end). Returns {generation, length, epoch, the
# running sums of the last record (false: none, or they do not hold), lines...}.
LOAD = (
    GENERATION
    + SUMS
    + """
local base = ARGV[1]
local gen = generation(base)
if not gen then return {'damaged', base .. 'gen'} end
local list = base .. 'g:' .. gen
local slist = base .. 's:' .. gen
local len = redis.call('LLEN', list)
local sums = false
if len > 0 and sums_hold(slist, base .. 'm:' .. gen, len) then
  sums = redis.call('LINDEX', slist, -1)
end
local out = {gen, len, redis.call('GET', base .. 'epoch') or '', sums}
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
    keys[#keys + 1] = base .. 's:' .. g
    keys[#keys + 1] = base .. 'm:' .. g
  end
end
local n = 0
for j = 1, #keys, 1000 do
  n = n + redis.call('DEL', unpack(keys, j, math.min(j + 999, #keys)))
end
return n
"""
)

# The reads of an open that leaves the oldest records in Redis (``_redis_tail.RedisRows``): each
# checks the session's epoch first ({0}: deleted or rebuilt since the open's first read); a
# generation's records below its length never change, so reads of one open need no more.
SAME_EPOCH = """
local base = ARGV[1]
if (redis.call('GET', base .. 'epoch') or '') ~= ARGV[2] then return {0} end
local list = base .. 'g:' .. ARGV[3]
"""

# ARGV: base, epoch, generation, then (first, last) position pairs. Returns {1, position, line,
# ...} for the records in each range; {0} also when the generation no longer holds them (an old
# generation expired while the session lived on).
ROWS = (
    SAME_EPOCH
    + """
local need = 0
for i = 5, #ARGV, 2 do need = math.max(need, tonumber(ARGV[i]) + 1) end
if redis.call('LLEN', list) < need then return {0} end
local out = {1}
for i = 4, #ARGV, 2 do
  local first = tonumber(ARGV[i])
  for k, item in ipairs(redis.call('LRANGE', list, first, tonumber(ARGV[i + 1]))) do
    out[#out + 1] = first + k - 1
    out[#out + 1] = item
  end
end
return out
"""
)

# ARGV: base, epoch, generation, start (> 0). Returns {1, the running sums of the record before
# start, then the ``m:<N>`` entry of each record before start that is no message}; {2}: the
# generation's sums do not hold (written blind, or by an earlier version); {0} also when the
# generation holds fewer than start records.
BEFORE = (
    SAME_EPOCH
    + GENERATION
    + SUMS
    + """
local slist = base .. 's:' .. ARGV[3]
local mlist = base .. 'm:' .. ARGV[3]
local start = tonumber(ARGV[4])
local len = redis.call('LLEN', list)
if len < start then return {0} end
if not sums_hold(slist, mlist, len) then return {2} end
local out = {1, redis.call('LINDEX', slist, start - 1)}
for _, entry in ipairs(redis.call('LRANGE', mlist, 0, -1)) do
  local n = checked(string.match(entry, '^(%d+)\\n'))
  if n and n < start then out[#out + 1] = entry end
end
return out
"""
)

SCRIPTS = {
    "append": APPEND,
    "rotate": ROTATE,
    "load": LOAD,
    "delete": DELETE,
    "rows": ROWS,
    "before": BEFORE,
}
# What the server files each script under (SHA-1 of its text; the scripts are ASCII, so every
# client encoding sends the same bytes).
SHAS = {name: hashlib.sha1(lua.encode()).hexdigest() for name, lua in SCRIPTS.items()}
