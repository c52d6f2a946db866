#!lua
-- The ledger's transitions on one host's keys (see ledger.go). Every key
-- carries the host's hash tag, so a call touches one slot. KEYS:
--   1 N      hash: counters r q d w, the host's sequence seq
--   2 LEASE  zset: requested keys, score = order their lease started
--   3 Q      zset: queued keys, score = order they were queued
--   4 DQ0    list: "fp|stamp" of keys done ok, in done order (sweep FIFO)
--   5 DQ1    list: the same for keys done failed
--   then per operation (see the op table at the end).
-- ARGV: 1 op, 2 now (µs since 1970; "" for the server's clock), 3 lease TTL µs (0 none), 4 done TTL
-- µs, 5 failed TTL µs (0 forever), 6 persist "1"/"0", 7 quiet "1"/"0",
-- 8 sweep limit, 9 seconds a done record outlives its TTL before Redis
-- drops it (EXPIRE), then the operation's own arguments from 10.
local N, LEASE, Q = KEYS[1], KEYS[2], KEYS[3]
local DQ = {KEYS[4], KEYS[5]}
local now = tonumber(ARGV[2])
if ARGV[2] == '' then -- the server's clock: coordinators' clocks may disagree
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local lttl = tonumber(ARGV[3])
local dttl = {tonumber(ARGV[4]), tonumber(ARGV[5])}
local persist = ARGV[6] == '1'
local quiet = ARGV[7] == '1'
local sweepLimit = tonumber(ARGV[8])
local slack = tonumber(ARGV[9])
local pre = string.sub(N, 1, -2) -- "ns:{host}:"

local function num(x) return string.format('%.0f', x) end
local NOW = num(now)
local function wk(fp) return pre .. 'wk:' .. fp end
local function wl(fp) return pre .. 'w:' .. fp end
local function sh(o) return pre .. 's:' .. o end
local function sw(o) return pre .. 'sw:' .. o end
local function co(o) return pre .. 'co:' .. string.match(o, '^[^.]*') end
local listed = {}
local function list(o) -- o has state on this host: listed under its coordinator
  if not listed[o] then
    redis.call('SADD', co(o), o)
    listed[o] = true
  end
end

local out = {}
local function push(...)
  for _, v in ipairs({...}) do out[#out + 1] = v end
end
local function ev(kind, o, fp, r)
  if not quiet then push('E', kind, o, fp, r) end
end
local function ans(o, req, fp, v, r) push('A', o, req, fp, v, r) end
local function wr(op, fp, oc, c, p, u)
  if persist and not quiet then push('W', op, fp, NOW, oc, c or '', p or '', u or '') end
end
-- the host's sequence and counters, read once and written back at the end
local seqv = false
local function seq()
  if not seqv then seqv = tonumber(redis.call('HGET', N, 'seq') or '0') end
  seqv = seqv + 1
  return seqv
end
local delta = {r = 0, q = 0, d = 0, w = 0}
local function count(f, d) delta[f] = delta[f] + d end
local function flush()
  if seqv then redis.call('HSET', N, 'seq', num(seqv)) end
  for f, d in pairs(delta) do
    if d ~= 0 then redis.call('HINCRBY', N, f, d) end
  end
end
local function reason(oc) if oc == '1' then return 'failed' end return 'done' end

-- a done record stamped stamp (whole seconds, rounded up) with outcome oc
local function expired(stamp, oc)
  local ttl = dttl[tonumber(oc) + 1]
  return ttl ~= 0 and now >= tonumber(stamp) * 1000000 + ttl
end

local function splitW(w)
  local o, req, since = string.match(w, '^([^|]*)|([^|]*)|(.*)$')
  return o, req, since
end

-- forget session o on this host once it holds and waits on nothing here
local function gcsess(o)
  if redis.call('EXISTS', sh(o)) == 0 and redis.call('EXISTS', sw(o)) == 0 then
    redis.call('SREM', co(o), o)
    listed[o] = nil
  end
end

local function answerWaiters(fp, r)
  local ws = redis.call('LRANGE', wl(fp), 0, -1)
  for _, w in ipairs(ws) do
    local o, req = splitW(w)
    ans(o, req, fp, 'no', r)
    redis.call('ZREM', sw(o), fp)
    gcsess(o)
  end
  if #ws > 0 then
    redis.call('DEL', wl(fp))
    count('w', -#ws)
  end
end

-- pass requested key fp (already out of its owner's set) to its first
-- waiter, or remove it
local function handOver(fp, cause)
  redis.call('ZREM', LEASE, fp)
  local w = redis.call('LPOP', wl(fp))
  if not w then
    redis.call('DEL', wk(fp))
    count('r', -1)
    return
  end
  local o, req = splitW(w)
  redis.call('ZREM', sw(o), fp)
  count('w', -1)
  redis.call('HSET', wk(fp), 'own', o, 'since', NOW, 'tok', seq())
  redis.call('ZADD', LEASE, seq(), fp)
  redis.call('ZADD', sh(o), seq(), fp)
  ans(o, req, fp, 'ok', 'handover')
  ev('handover', o, fp, cause)
end

local function expireLeases(limit)
  if lttl == 0 then return end
  for _ = 1, limit do
    local head = redis.call('ZRANGE', LEASE, 0, 0)[1]
    if not head then return end
    local r = redis.call('HMGET', wk(head), 'since', 'own')
    if tonumber(r[1]) + lttl > now then return end
    redis.call('ZREM', sh(r[2]), head)
    ev('expired', r[2], head, 'expired')
    handOver(head, 'expired')
    gcsess(r[2])
  end
end

local function sweepDone(limit)
  for i = 1, 2 do
    if dttl[i] ~= 0 then
      for _ = 1, limit do
        local e = redis.call('LINDEX', DQ[i], 0)
        if not e then break end
        local fp, stamp = string.match(e, '^([^|]*)|(.*)$')
        if not expired(stamp, tostring(i - 1)) then break end
        redis.call('LPOP', DQ[i])
        local r = redis.call('HMGET', wk(fp), 'st', 't', 'oc')
        if r[1] == 'd' and r[2] == stamp and r[3] == tostring(i - 1) then
          redis.call('DEL', wk(fp))
          count('d', -1)
          wr('delete', fp, '0')
        end
      end
    end
  end
end

local function request(o, req, fp, c, p, u)
  local k = wk(fp)
  local r = redis.call('HMGET', k, 'st', 'own', 't', 'oc')
  local st = r[1]
  if st == 'q' then return 'no', 'queued' end
  if st == 'r' then
    if r[2] == o then return 'ok', 'owner' end
    local ws = redis.call('LRANGE', wl(fp), 0, -1)
    for i, w in ipairs(ws) do
      local wo, _, since = splitW(w)
      if wo == o then
        redis.call('LSET', wl(fp), i - 1, o .. '|' .. req .. '|' .. since)
        return 'wait', 'requested'
      end
    end
    redis.call('RPUSH', wl(fp), o .. '|' .. req .. '|' .. NOW)
    redis.call('ZADD', sw(o), seq(), fp)
    list(o)
    count('w', 1)
    ev('waiting', o, fp, '')
    return 'wait', 'requested'
  end
  if st == 'd' then
    if not expired(r[3], r[4]) then return 'no', reason(r[4]) end
    redis.call('DEL', k)
    count('d', -1)
    wr('delete', fp, '0')
  end
  redis.call('HSET', k, 'st', 'r', 'own', o, 'since', NOW, 'tok', seq(), 'c', c, 'p', p, 'u', u)
  redis.call('ZADD', LEASE, seq(), fp)
  redis.call('ZADD', sh(o), seq(), fp)
  list(o)
  count('r', 1)
  ev('requested', o, fp, '')
  return 'ok', ''
end

-- requested key fp of owner o becomes queued
local function toQueued(fp, o)
  answerWaiters(fp, 'queued')
  redis.call('ZREM', sh(o), fp)
  gcsess(o)
  redis.call('ZREM', LEASE, fp)
  local k = wk(fp)
  redis.call('HSET', k, 'st', 'q', 'since', NOW)
  redis.call('HDEL', k, 'own')
  redis.call('ZADD', Q, seq(), fp)
  count('r', -1)
  count('q', 1)
  ev('queued', o, fp, '')
  local key = redis.call('HMGET', k, 'c', 'p', 'u')
  wr('put-queued', fp, '0', key[1], key[2], key[3])
end

local function queue(o, fp)
  local r = redis.call('HMGET', wk(fp), 'st', 'own', 't', 'oc')
  local st = r[1]
  if not st then return 'error', 'unknown' end
  if st == 'd' then
    if expired(r[3], r[4]) then return 'error', 'unknown' end
    return 'error', 'wrong-state'
  end
  if st ~= 'r' then return 'error', 'wrong-state' end
  if r[2] ~= o then return 'error', 'not-owner' end
  toQueued(fp, o)
  return 'ok', ''
end

-- drop fp's requested or queued record (its waiters answered with r)
local function dropLive(fp, st, own, r)
  answerWaiters(fp, r)
  if st == 'r' then
    redis.call('ZREM', sh(own), fp)
    gcsess(own)
    redis.call('ZREM', LEASE, fp)
    count('r', -1)
  else
    redis.call('ZREM', Q, fp)
    count('q', -1)
  end
  redis.call('DEL', wk(fp))
end

local function markDone(fp, oc, c, p, u)
  local k = wk(fp)
  local r = redis.call('HMGET', k, 'st', 'own')
  local st = r[1]
  local rs = reason(oc)
  if st == 'r' or st == 'q' then dropLive(fp, st, r[2], rs) end
  if st ~= 'd' then count('d', 1) end
  local stamp = num(math.ceil(now / 1000000))
  redis.call('DEL', k)
  redis.call('HSET', k, 'st', 'd', 't', stamp, 'oc', oc)
  local ttl = dttl[tonumber(oc) + 1]
  if ttl ~= 0 then
    redis.call('RPUSH', DQ[tonumber(oc) + 1], fp .. '|' .. stamp)
    redis.call('EXPIRE', k, math.ceil(ttl / 1000000) + slack)
  end
  ev('done', '', fp, rs)
  wr('put-done', fp, oc, c, p, u)
end

local function release(o)
  for _, fp in ipairs(redis.call('ZRANGE', sw(o), 0, -1)) do
    for _, w in ipairs(redis.call('LRANGE', wl(fp), 0, -1)) do
      if splitW(w) == o then
        redis.call('LREM', wl(fp), 1, w)
        count('w', -1)
        break
      end
    end
    ev('left', o, fp, 'released')
  end
  redis.call('DEL', sw(o))
  local held = redis.call('ZRANGE', sh(o), 0, -1)
  redis.call('DEL', sh(o))
  for _, fp in ipairs(held) do
    ev('released', o, fp, 'released')
    handOver(fp, 'released')
  end
  gcsess(o)
end

local function requeue(fp, c, p, u)
  local k = wk(fp)
  local r = redis.call('HMGET', k, 'st', 'own')
  if r[1] == 'q' then return end
  if r[1] == 'r' then
    toQueued(fp, r[2])
    return
  end
  if r[1] == 'd' then
    redis.call('DEL', k)
    count('d', -1)
  end
  redis.call('HSET', k, 'st', 'q', 'since', NOW, 'tok', seq(), 'c', c, 'p', p, 'u', u)
  redis.call('ZADD', Q, seq(), fp)
  count('q', 1)
  ev('queued', '', fp, '')
  wr('put-queued', fp, '0', c, p, u)
end

-- Restore: rebuild from (or import) a persisted record, quietly.
local function restore(op, fp, oc, c, p, u)
  local k = wk(fp)
  local r = redis.call('HMGET', k, 'st', 'own')
  if op == 'put-queued' then
    if r[1] == 'd' then
      redis.call('DEL', k)
      count('d', -1)
      r[1] = false
    end
    if not r[1] then
      redis.call('HSET', k, 'st', 'q', 'since', NOW, 'tok', seq(), 'c', c, 'p', p, 'u', u)
      redis.call('ZADD', Q, seq(), fp)
      count('q', 1)
    elseif r[1] == 'r' then
      toQueued(fp, r[2])
    end
  elseif op == 'put-done' then
    markDone(fp, oc, c, p, u)
  elseif op == 'delete' then
    if r[1] == 'd' then
      redis.call('DEL', k)
      count('d', -1)
    elseif r[1] == 'q' then
      redis.call('ZREM', Q, fp)
      redis.call('DEL', k)
      count('q', -1)
    end
  end
end

local function deadline()
  if lttl == 0 then return end
  local head = redis.call('ZRANGE', LEASE, 0, 0)[1]
  if head then
    push('D', num(tonumber(redis.call('HGET', wk(head), 'since')) + lttl))
  end
end

local op = ARGV[1]
expireLeases(10000)
if op == 'request' then
  local o, req = ARGV[10], ARGV[11]
  for i = 12, #ARGV, 4 do
    local v, r = request(o, req, ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
    push('R', v, r)
  end
elseif op == 'queue' then
  local o = ARGV[10]
  for i = 11, #ARGV do
    local v, r = queue(o, ARGV[i])
    push('R', v, r)
  end
elseif op == 'done' then
  local oc = ARGV[10]
  local n = 0
  for i = 11, #ARGV, 4 do
    markDone(ARGV[i], oc, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
    n = n + 1
  end
  sweepDone(2 * n)
elseif op == 'requeue' then
  requeue(ARGV[10], ARGV[11], ARGV[12], ARGV[13])
elseif op == 'release' then
  release(ARGV[10])
elseif op == 'release-all' then
  -- every session of a dead coordinator on this host
  for _, o in ipairs(redis.call('SMEMBERS', KEYS[6])) do release(o) end
elseif op == 'restore' then
  restore(ARGV[10], ARGV[11], ARGV[12], ARGV[13], ARGV[14], ARGV[15])
elseif op == 'expire' then
  -- nothing more: leases were expired above
elseif op == 'tick' then
  sweepDone(sweepLimit)
  push('S', num(redis.call('LLEN', DQ[1]) + redis.call('LLEN', DQ[2])))
else
  return redis.error_reply('drover ledger: unknown operation ' .. tostring(op))
end
flush()
deadline()
return out
