#!lua name=drover_ledger
local FN = 'drover_ledger' -- ledger.go names the library and functions by the code's hash
-- The ledger's transitions on one host's keys (see ledger.go), as a Redis
-- function library: loaded once per node (FUNCTION LOAD), its functions
-- built once, each transition one FCALL of drover_ledger_V (flags: none,
-- so it may write, may not cross slots and runs on masters only) and each
-- read one of drover_ledger_V_get (no-writes). Every key carries the
-- host's hash tag, so a call touches one slot. A key's fingerprint FP is
-- its 16 raw bytes. KEYS:
--   1 N      hash: counters r q d w, the host's sequence seq
--   2 LEASE  requested FPs in the order their lease started, in zsets
--            LEASE:B of the FPs whose lease has sequence number s with
--            floor(s / 128) = B (score s), so each holds at most 128 and
--            Redis keeps it as a listpack; N's field lh is the lowest B
--            that may hold one
--   3 Q      zset: queued FPs, score = order they were queued
--   4 DQ0    list: FP .. stamp of keys done ok, in done order (sweep FIFO)
--   5 DQ1    list: the same for keys done failed
--   6 K      hash: FP -> the key's record, cmsgpack-packed:
--              requested  'r', owner, lease start µs, crawler, processor, URL,
--                         the lease's sequence number
--              queued     'q', '', since µs, crawler, processor, URL
--              done       'd', stamp (whole seconds, rounded up), outcome '0'/'1'
--            bucket 0 of the host's records; bucket B > 0 is K:B. The
--            buckets split one at a time as the host grows (linear hashing
--            on the FP's first 4 bytes; N's field kb counts them, 1 if
--            none), so each keeps well under 512 fields, and Redis keeps
--            it as a listpack (36 B a done record, not 108 in a hash table).
--   then, for request, queue and release, 7 S (set: the FPs owner o
--   holds), 8 SW (zset: the FPs o waits on), 9 CO (set: the owners of o's
--   coordinator with state here); for release-all, 7 CO of the dead one.
--   Undeclared, in the same slot: PREFIX:{host}:w:FP, the FIFO of waiters
--   "owner|req|since", and other owners' S, SW and CO.
-- ARGV: 1 op, 2 now (µs since 1970; "" for the server's clock), 3 lease TTL µs (0 none), 4 done TTL
-- µs, 5 failed TTL µs (0 forever), 6 persist "1"/"0", 7 quiet "1"/"0",
-- 8 sweep limit, 9 seconds the host's keys outlive the TTLs once only done
-- records are left (EXPIRE), 10 the host's next lease deadline (µs) as the
-- caller last heard it ("" if unknown): while it is ahead of now no lease
-- can have expired (a lease ends lttl after it starts, and leases start in
-- their order in LEASE), so the call skips the check; then the
-- operation's own arguments from 11.
local KEYS, ARGV -- the call's keys and arguments
local N, LEASE, Q, K, DQ, pre, op
local cache, dirty, wrote, pend
local now, NOW, lttl, dttl, persist, quiet, sweepLimit, slack
local listed, out, seqv, seqUsed, delta, gcLater
local lh, lhRead -- the lowest lease bucket that may hold an entry (nil: not read yet); as read
local leaseCut -- an entry left LEASE in this call: its head may have moved
local nb, low -- the host's record buckets (nil: not read yet); the largest power of 2 <= nb
local LOAD = 32 -- records per bucket on average before one more splits (a listpack is
-- searched field by field: at 384 fields a lookup costs 7 times one in a hash table)

-- the bucket of fp's record, of nb
local function hashOf(fp)
  local a, b, c, d = string.byte(fp, 1, 4)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local function setBuckets(n)
  nb, low = n, 1
  while low * 2 <= nb do low = low * 2 end
end
local function bucketOf(fp)
  if not nb then setBuckets(tonumber(redis.call('HGET', N, 'kb') or '1')) end
  local h = hashOf(fp)
  local b = h % low
  if b < nb - low then b = h % (2 * low) end -- its bucket has split
  return b
end
local function bkey(b)
  if b == 0 then return K end
  return K .. ':' .. b
end

-- Redis calls cost more than the work they do here, so a call does few:
-- records are read once (one HMGET for a batch's keys) and written back
-- at the end (one HSET, one HDEL); consecutive adds to (or removals from)
-- one set, sorted set or list go out as one command, sent before any other
-- command on that key.
-- cache: fp -> record table or false (none); dirty: fp -> true; wrote:
-- a write sent straight away or a buffered one sent (not through put,
-- count or seq)
local function get(fp)
  local r = cache[fp]
  if r == nil then
    local v = redis.call('HGET', bkey(bucketOf(fp)), fp)
    r = v and {cmsgpack.unpack(v)} or false
    cache[fp] = r
  end
  return r or nil
end
-- many calls of cmd on key k with args, at most 1000 arguments each
local function many(cmd, k, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, k, unpack(args, i, math.min(i + 999, #args)))
  end
end
-- the list at t[k], made empty if there is none
local function listAt(t, k)
  local l = t[k]
  if not l then
    l = {}
    t[k] = l
  end
  return l
end
local function prefetch(from, step)
  local need, seen = {}, {}
  for i = from, #ARGV, step do
    local fp = ARGV[i]
    if cache[fp] == nil and not seen[fp] then
      need[#need + 1] = fp
      seen[fp] = true
    end
  end
  local by = {} -- bucket -> its FPs in need
  for _, fp in ipairs(need) do
    local l = listAt(by, bucketOf(fp))
    l[#l + 1] = fp
  end
  for b, l in pairs(by) do
    for i = 1, #l, 1000 do
      local part = {unpack(l, i, math.min(i + 999, #l))}
      local vs = redis.call('HMGET', bkey(b), unpack(part))
      for j, fp in ipairs(part) do
        cache[fp] = vs[j] and {cmsgpack.unpack(vs[j])} or false
      end
    end
  end
end
local function put(fp, ...)
  cache[fp] = {...}
  dirty[fp] = true
end
local function del(fp)
  cache[fp] = false
  dirty[fp] = true
end
local function flushRecords()
  local sets, dels = {}, {} -- bucket -> HSET arguments; bucket -> HDEL arguments
  for fp in pairs(dirty) do
    local r = cache[fp]
    local a = listAt(r and sets or dels, bucketOf(fp))
    a[#a + 1] = fp
    if r then a[#a + 1] = cmsgpack.pack(unpack(r)) end
  end
  for b, a in pairs(sets) do many('HSET', bkey(b), a) end
  for b, a in pairs(dels) do many('HDEL', bkey(b), a) end
  dirty = {}
end
-- one more bucket: the records of the next to split whose hash says so
-- move to the new one
local function split()
  local p = nb - low
  local from, to = bkey(p), bkey(p + low)
  local kv = redis.call('HGETALL', from)
  local move, gone = {}, {}
  for i = 1, #kv, 2 do
    if hashOf(kv[i]) % (2 * low) ~= p then
      move[#move + 1] = kv[i]
      move[#move + 1] = kv[i + 1]
      gone[#gone + 1] = kv[i]
    end
  end
  many('HSET', to, move)
  many('HDEL', from, gone)
  setBuckets(nb + 1)
  redis.call('HSET', N, 'kb', nb)
end
-- pend: key -> {cmd, args}: adds or removals not yet sent
local function flushKey(k)
  local p = pend[k]
  if p then
    pend[k] = nil
    many(p[1], k, p[2])
    if #p[2] > 0 then wrote = true end
  end
end
local function buf(cmd, k, ...)
  local p = pend[k]
  if p and p[1] ~= cmd then
    flushKey(k)
    p = nil
  end
  if not p then
    p = {cmd, {}}
    pend[k] = p
  end
  local a = p[2]
  for _, v in ipairs({...}) do a[#a + 1] = v end
end
local function call(cmd, k, ...) -- any other command on a buffered key
  flushKey(k)
  return redis.call(cmd, k, ...)
end
local function flushAll()
  for k in pairs(pend) do flushKey(k) end
end
local function wl(fp) return pre .. 'w:' .. fp end
local LB = 128 -- lease entries per bucket (zset-max-listpack-entries)
local function lkey(b) return LEASE .. ':' .. b end
-- the lease of fp, record r, ends: out of its bucket
local function unlease(fp, r)
  if r and r[7] then buf('ZREM', lkey(math.floor(r[7] / LB)), fp) end
  leaseCut = true
end

-- the records of FPs, no transition (drover_ledger_V_get)
local function getRecords(keys, args)
  KEYS, ARGV, N, K, pre = keys, args, keys[1], keys[6], string.sub(keys[1], 1, -2)
  cache, nb = {}, nil
  local res = {}
  for i = 11, #ARGV do
    local fp = ARGV[i]
    local r = get(fp) or {''}
    local n = 0
    if r[1] == 'r' then n = redis.call('LLEN', wl(fp)) end
    for j = 1, 6 do res[#res + 1] = tostring(r[j] or '') end
    res[#res + 1] = tostring(n)
  end
  return res
end

local function num(x) return string.format('%.0f', x) end
local function sh(o) return pre .. 's:' .. o end
local function sw(o) return pre .. 'sw:' .. o end
local function co(o) return pre .. 'co:' .. string.match(o, '^[^.]*') end
local function list(o) -- o has state on this host: listed under its coordinator
  if not listed[o] then
    buf('SADD', co(o), o)
    listed[o] = true
  end
end

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
local function seqNow() -- the host's last sequence number
  if not seqv then seqv = tonumber(redis.call('HGET', N, 'seq') or '0') end
  return seqv
end
local function seq()
  seqv = seqNow() + 1
  seqUsed = true
  return seqv
end
local function count(f, d) delta[f] = delta[f] + d end
local function reason(oc) if oc == '1' then return 'failed' end return 'done' end

-- forget session o on this host once it holds and waits on nothing here
-- (checked at the end of the call)
local function gcsess(o) gcLater[o] = true end
local function gcAll()
  for o in pairs(gcLater) do
    if call('EXISTS', sh(o)) == 0 and call('EXISTS', sw(o)) == 0 then
      if call('SREM', co(o), o) == 1 then wrote = true end
    end
  end
end

-- Once a host holds only done records, its keys expire (EXPIRE) a while
-- after the longest TTL, in case no sweep reaches them; a live record
-- makes them persist again. Only when both TTLs are set: a record kept
-- forever must not expire.
local function flush()
  -- whether this call changed anything: the ledger WAITs for replicas
  -- only then (an all-duplicate batch changes nothing); known once the
  -- records, the sessions forgotten and the buffered commands are sent
  local changed = seqUsed or next(dirty) ~= nil
  for _, d in pairs(delta) do changed = changed or d ~= 0 end
  local more = delta.r + delta.q + delta.d
  if more > 0 then
    -- more records: split buckets first, so that none takes more than
    -- 512 (Redis never turns a hash table back into a listpack)
    local c = redis.call('HMGET', N, 'r', 'q', 'd')
    local n = tonumber(c[1] or '0') + tonumber(c[2] or '0') + tonumber(c[3] or '0') + more
    if n > LOAD then
      bucketOf('\0\0\0\0') -- nb read
      while n > LOAD * nb do split() end
    end
  end
  flushRecords()
  gcAll()
  flushAll()
  if changed or wrote then push('M', '1') end
  if seqUsed then redis.call('HSET', N, 'seq', num(seqv)) end
  -- a hint, lower than the truth being harmless: not worth a WAIT
  if lh and lh ~= lhRead then redis.call('HSET', N, 'lh', lh) end
  local counted = false
  for f, d in pairs(delta) do
    if d ~= 0 then
      redis.call('HINCRBY', N, f, d)
      counted = true
    end
  end
  if counted and dttl[1] ~= 0 and dttl[2] ~= 0 then
    local c = redis.call('HMGET', N, 'r', 'q', 'w')
    local live = tonumber(c[1] or '0') + tonumber(c[2] or '0') + tonumber(c[3] or '0')
    local before = live - delta.r - delta.q - delta.w
    local keys = {N, DQ[1], DQ[2]}
    bucketOf('\0\0\0\0') -- nb read
    for b = 0, nb - 1 do keys[#keys + 1] = bkey(b) end
    if live == 0 and (before ~= 0 or delta.d > 0) then
      -- only done records left, or a new one: they expire from now
      local ttl = math.ceil(math.max(dttl[1], dttl[2]) / 1000000) + slack
      for _, k in ipairs(keys) do redis.call('EXPIRE', k, ttl) end
    elseif live > 0 and before == 0 then
      -- live again: the keys may carry a TTL (none do while live)
      for _, k in ipairs(keys) do redis.call('PERSIST', k) end
    end
  end
end

-- a done record stamped stamp with outcome oc has expired
local function expired(stamp, oc)
  local ttl = dttl[tonumber(oc) + 1]
  return ttl ~= 0 and now >= tonumber(stamp) * 1000000 + ttl
end

local function splitW(w)
  local o, req, since = string.match(w, '^([^|]*)|([^|]*)|(.*)$')
  return o, req, since
end

local function answerWaiters(fp, r)
  local ws = redis.call('LRANGE', wl(fp), 0, -1)
  for _, w in ipairs(ws) do
    local o, req = splitW(w)
    ans(o, req, fp, 'no', r)
    buf('ZREM', sw(o), fp)
    gcsess(o)
  end
  if #ws > 0 then
    redis.call('DEL', wl(fp))
    count('w', -#ws)
  end
end

-- pass requested key fp (record rec, already out of its owner's set) to
-- its first waiter, or remove it
local function handOver(fp, rec, cause)
  unlease(fp, rec)
  local w = redis.call('LPOP', wl(fp))
  if not w then
    del(fp)
    count('r', -1)
    return
  end
  local o, req = splitW(w)
  buf('ZREM', sw(o), fp)
  count('w', -1)
  local s = seq()
  put(fp, 'r', o, NOW, rec[4], rec[5], rec[6], s)
  buf('ZADD', lkey(math.floor(s / LB)), s, fp)
  buf('SADD', sh(o), fp)
  ans(o, req, fp, 'ok', 'handover')
  ev('handover', o, fp, cause)
end

-- the first FP in lease order (nil: none): the first of the lowest
-- bucket that holds one, from lh on (lh moves up past empty ones, never
-- past the bucket of the host's last sequence number, which may fill yet)
local function leaseHead()
  if not lh then
    lh = tonumber(redis.call('HGET', N, 'lh') or '0')
    lhRead = lh
  end
  local top = math.floor(seqNow() / LB)
  while true do
    local head = call('ZRANGE', lkey(lh), 0, 0)[1]
    if head or lh >= top then return head end
    lh = lh + 1
  end
end

local function expireLeases(limit)
  if lttl == 0 then return end
  for _ = 1, limit do
    local head = leaseHead()
    if not head then return end
    local r = get(head)
    if not r or r[1] ~= 'r' then -- no lease: drop the stray entry
      buf('ZREM', lkey(lh), head)
      leaseCut = true
    else
      if tonumber(r[3]) + lttl > now then return end
      buf('SREM', sh(r[2]), head)
      ev('expired', r[2], head, 'expired')
      handOver(head, r, 'expired')
      gcsess(r[2])
    end
  end
end

local function sweepDone(limit)
  for i = 1, 2 do
    if dttl[i] ~= 0 then
      for _ = 1, limit do
        local e = call('LINDEX', DQ[i], 0)
        if not e then break end
        local fp, stamp = string.sub(e, 1, 16), string.sub(e, 17)
        if not expired(stamp, tostring(i - 1)) then break end
        call('LPOP', DQ[i])
        wrote = true
        local r = get(fp)
        if r and r[1] == 'd' and r[2] == stamp and r[3] == tostring(i - 1) then
          del(fp)
          count('d', -1)
          wr('delete', fp, '0')
        end
      end
    end
  end
end

local function request(o, req, fp, c, p, u)
  local r = get(fp)
  local st = r and r[1]
  if st == 'q' then return 'no', 'queued' end
  if st == 'r' then
    if r[2] == o then return 'ok', 'owner' end
    local ws = redis.call('LRANGE', wl(fp), 0, -1)
    for i, w in ipairs(ws) do
      local wo, _, since = splitW(w)
      if wo == o then
        local w = o .. '|' .. req .. '|' .. since
        if w ~= ws[i] then
          redis.call('LSET', wl(fp), i - 1, w)
          wrote = true
        end
        return 'wait', 'requested'
      end
    end
    redis.call('RPUSH', wl(fp), o .. '|' .. req .. '|' .. NOW)
    buf('ZADD', sw(o), seq(), fp)
    list(o)
    count('w', 1)
    ev('waiting', o, fp, '')
    return 'wait', 'requested'
  end
  if st == 'd' then
    if not expired(r[2], r[3]) then return 'no', reason(r[3]) end
    count('d', -1)
    wr('delete', fp, '0')
  end
  local s = seq()
  put(fp, 'r', o, NOW, c, p, u, s)
  buf('ZADD', lkey(math.floor(s / LB)), s, fp)
  buf('SADD', sh(o), fp)
  list(o)
  count('r', 1)
  ev('requested', o, fp, '')
  return 'ok', ''
end

-- requested key fp (record rec) of owner o becomes queued
local function toQueued(fp, rec, o)
  answerWaiters(fp, 'queued')
  buf('SREM', sh(o), fp)
  gcsess(o)
  unlease(fp, rec)
  put(fp, 'q', '', NOW, rec[4], rec[5], rec[6])
  buf('ZADD', Q, seq(), fp)
  count('r', -1)
  count('q', 1)
  ev('queued', o, fp, '')
  wr('put-queued', fp, '0', rec[4], rec[5], rec[6])
end

local function queue(o, fp)
  local r = get(fp)
  if not r then return 'error', 'unknown' end
  local st = r[1]
  if st == 'd' then
    if expired(r[2], r[3]) then return 'error', 'unknown' end
    return 'error', 'wrong-state'
  end
  if st ~= 'r' then return 'error', 'wrong-state' end
  if r[2] ~= o then return 'error', 'not-owner' end
  toQueued(fp, r, o)
  return 'ok', ''
end

-- drop fp's requested or queued record r (its waiters answered with rs)
local function dropLive(fp, r, rs)
  answerWaiters(fp, rs)
  if r[1] == 'r' then
    buf('SREM', sh(r[2]), fp)
    gcsess(r[2])
    unlease(fp, r)
    count('r', -1)
  else
    buf('ZREM', Q, fp)
    count('q', -1)
  end
  del(fp)
end

local function markDone(fp, oc, c, p, u)
  local r = get(fp)
  local st = r and r[1]
  if st == 'r' or st == 'q' then dropLive(fp, r, reason(oc)) end
  if st ~= 'd' then count('d', 1) end
  local stamp = num(math.ceil(now / 1000000))
  put(fp, 'd', stamp, oc)
  if dttl[tonumber(oc) + 1] ~= 0 then
    buf('RPUSH', DQ[tonumber(oc) + 1], fp .. stamp)
  end
  ev('done', '', fp, reason(oc))
  wr('put-done', fp, oc, c, p, u)
end

local function release(o)
  for _, fp in ipairs(call('ZRANGE', sw(o), 0, -1)) do
    for _, w in ipairs(redis.call('LRANGE', wl(fp), 0, -1)) do
      if splitW(w) == o then
        redis.call('LREM', wl(fp), 1, w)
        count('w', -1)
        break
      end
    end
    ev('left', o, fp, 'released')
  end
  if call('DEL', sw(o)) == 1 then wrote = true end
  -- in the order the leases began (their sequence numbers)
  local held = {}
  for _, fp in ipairs(call('SMEMBERS', sh(o))) do
    local r = get(fp)
    held[#held + 1] = {fp, r and r[7] or 0}
  end
  table.sort(held, function(a, b) return a[2] < b[2] end)
  if call('DEL', sh(o)) == 1 then wrote = true end
  for _, h in ipairs(held) do
    ev('released', o, h[1], 'released')
    local rec = get(h[1])
    if rec then
      handOver(h[1], rec, 'released')
    end
  end
  gcsess(o)
end

local function requeue(fp, c, p, u)
  local r = get(fp)
  local st = r and r[1]
  if st == 'q' then return end
  if st == 'r' then
    toQueued(fp, r, r[2])
    return
  end
  if st == 'd' then count('d', -1) end
  put(fp, 'q', '', NOW, c, p, u)
  buf('ZADD', Q, seq(), fp)
  count('q', 1)
  ev('queued', '', fp, '')
  wr('put-queued', fp, '0', c, p, u)
end

-- Restore: rebuild from (or import) a persisted record, quietly.
local function restore(op, fp, oc, c, p, u)
  local r = get(fp)
  local st = r and r[1]
  if op == 'put-queued' then
    if st == 'd' then
      del(fp)
      count('d', -1)
      st = nil
    end
    if not st then
      put(fp, 'q', '', NOW, c, p, u)
      buf('ZADD', Q, seq(), fp)
      count('q', 1)
    elseif st == 'r' then
      toQueued(fp, r, r[2])
    end
  elseif op == 'put-done' then
    markDone(fp, oc, c, p, u)
  elseif op == 'delete' then
    if st == 'd' then
      del(fp)
      count('d', -1)
    elseif st == 'q' then
      buf('ZREM', Q, fp)
      del(fp)
      count('q', -1)
    end
  end
end

local function deadline()
  if lttl == 0 then return end
  local head = leaseHead()
  local r = head and get(head)
  if r then push('D', num(tonumber(r[3]) + lttl)) end
end

-- a transition (drover_ledger_V): ARGV[1] names it
local function transition(keys, args)
  KEYS, ARGV = keys, args
  N, LEASE, Q, K = KEYS[1], KEYS[2], KEYS[3], KEYS[6]
  DQ = {KEYS[4], KEYS[5]}
  pre = string.sub(N, 1, -2) -- "ns:{host}:"
  op = ARGV[1]
  cache, dirty, wrote, pend, nb = {}, {}, false, {}, nil
  listed, out, seqv, seqUsed, gcLater, leaseCut = {}, {}, false, false, {}, false
  lh, lhRead = nil, nil
  delta = {r = 0, q = 0, d = 0, w = 0}
  now = tonumber(ARGV[2])
  if ARGV[2] == '' then -- the server's clock: coordinators' clocks may disagree
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  NOW = num(now)
  lttl = tonumber(ARGV[3])
  dttl = {tonumber(ARGV[4]), tonumber(ARGV[5])}
  persist = ARGV[6] == '1'
  quiet = ARGV[7] == '1'
  sweepLimit = tonumber(ARGV[8])
  slack = tonumber(ARGV[9])
  local known = tonumber(ARGV[10])
  local ahead = known ~= nil and known > now
  if not ahead then expireLeases(10000) end
  if op == 'request' then
    local o, req = ARGV[11], ARGV[12]
    prefetch(13, 4)
    for i = 13, #ARGV, 4 do
      local v, r = request(o, req, ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
      push('R', v, r)
    end
  elseif op == 'queue' then
    local o = ARGV[11]
    prefetch(12, 1)
    for i = 12, #ARGV do
      local v, r = queue(o, ARGV[i])
      push('R', v, r)
    end
  elseif op == 'done' then
    local oc = ARGV[11]
    local n = 0
    prefetch(12, 4)
    for i = 12, #ARGV, 4 do
      markDone(ARGV[i], oc, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
      n = n + 1
    end
    sweepDone(2 * n)
  elseif op == 'requeue' then
    requeue(ARGV[11], ARGV[12], ARGV[13], ARGV[14])
  elseif op == 'release' then
    release(ARGV[11])
  elseif op == 'release-all' then
    -- every session of a dead coordinator on this host
    for _, o in ipairs(call('SMEMBERS', KEYS[7])) do release(o) end
  elseif op == 'restore' then
    restore(ARGV[11], ARGV[12], ARGV[13], ARGV[14], ARGV[15], ARGV[16])
  elseif op == 'expire' then
    -- nothing more: leases were expired above
  elseif op == 'tick' then
    sweepDone(sweepLimit)
    push('S', num(call('LLEN', DQ[1]) + call('LLEN', DQ[2])))
  else
    return redis.error_reply('drover ledger: unknown operation ' .. tostring(op))
  end
  flush()
  if ahead and not leaseCut then
    push('D', ARGV[10]) -- LEASE's head is where it was
  else
    deadline()
  end
  return out
end

redis.register_function{function_name = FN, callback = transition, flags = {}}
redis.register_function{function_name = FN .. '_get', callback = getRecords, flags = {'no-writes'}}
