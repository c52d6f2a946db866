#!lua
-- The shared job queue's transitions on one host's keys (queue.go). An
-- entry is "FP JSON": the key's fingerprint, a space, the job. KEYS:
--   1 JQ   list: the host's queued jobs politeness does not apply to
--   2 JL   hash: FP -> entry, those leased to coordinator C
--   3 PQ   list: the host's queued jobs politeness applies to
--   4 PL   hash: FP -> entry, those leased to C
--   5 POL  hash: the host's politeness and back-off across every
--          coordinator:
--            n     its polite jobs leased (to any coordinator)
--            next  µs on this server's clock before which no polite job
--                  of the host is claimed (at most an interval ahead: a
--                  claim after a failover to a master whose clock is
--                  behind clamps it)
--            g     the longest interval µs a coordinator gave while the
--                  record lived (one whose workers read the host's
--                  robots.txt Crawl-delay gives it), applied by every
--                  coordinator
--            bu    µs before which none of the host's jobs is claimed:
--                  its back-off (a 429 or 503 a coordinator's worker got)
--            bl    the back-off's level (throttles in a row, the highest
--                  a coordinator reported)
--            ku    µs until which bu and bl are kept (the level is
--                  forgiven then)
--            bc    the coordinator that last moved bu
--            bd    the longest back-off µs a coordinator set, kd the longest
--                  time µs to forgive its level: bu is at most bd and ku at
--                  most kd (or bu) ahead (a failover to a master whose
--                  clock is behind clamps them, as next)
--   6 STATS hash: the counts of the host's slot (stats.go): q jobs in
--          queues, d and f jobs finished done and failed, s:C the
--          number of coordinator C's last finish counted. Every operation
--          below that moves jobs keeps them in the same run.
-- ARGV: 1 op, then the operation's own arguments.
--   push   2 k, then entries: the first k to PQ, the rest to JQ (at the
--          back). Answers how many.
--   claim  2 the most jobs to take, 3 the host's cap (0 none), 4 its
--          interval µs (0 none). Nothing while the host backs off; else
--          polite jobs first, at most cap - n of them, and one per
--          interval; then the others. Answers the jobs left in JQ and PQ,
--          the µs until the host's next polite claim when polite jobs wait
--          for its interval (0 otherwise), the back-off (as peek), the
--          jobs left in PQ, the polite jobs leased (n), then the entries
--          claimed (now in JL, PL).
--   finish 2 the host's interval µs, 3 the call's number n, 4 C, 5 k,
--          then FPs, the first k done, the rest failed: ends C's leases of
--          them; a polite one frees its slot and the host's next claim
--          waits an interval from now. Counts them done and failed (all,
--          leased or not: they ran) unless C's calls numbered n or more
--          were counted here (the same call sent again). Answers how many
--          leases ended.
--   unlease 2 C. (C is dead, or stopping) every job leased to C goes back
--          to the front of its queue, uncharged, its slots freed. Answers
--          how many. Running it twice is harmless: JL and PL are gone.
--   forget 2.. the FPs of the host's jobs C knows it holds (claimed, not
--          finished): every other job leased to C (one a claim whose
--          answer C did not get leased) goes back to the front of its
--          queue, uncharged, its slot freed. Answers how many. Harmless
--          twice, and when the claim had not run.
--   backoff 2 µs until the back-off C's throttle set ends, 3 its level,
--          4 µs until its level is forgiven, 5 C: the host's back-off
--          ends no sooner, its level is no lower. Answers peek's.
--   unfail 2 n: takes n jobs requeued after they failed back out of the
--          slot's failed count (they are counted again when they end).
--   peek   Answers the host's back-off: the µs until it ends (0: none in
--          force), its level, the µs until the level is forgiven, and the
--          coordinator that last moved its end.
--   wait   Answers why the host's queued jobs wait, for the job views:
--          the µs until its back-off ends (0: none in force) and until
--          its next polite claim (0: none due later).
-- Time is the server's (TIME): every script on one host runs on the one
-- master holding the host's slot, so coordinators whose clocks disagree
-- still see one clock; the caller sends intervals, which no skew changes.
local JQ, JL, PQ, PL, POL, STATS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local op = ARGV[1]

local function num(x) return string.format('%.0f', x) end
-- HDEL of many fields, a thousand at a time (unpack's stack is bounded)
local function hdel(key, fields)
  local n = 0
  for i = 1, #fields, 1000 do
    n = n + redis.call('HDEL', key, unpack(fields, i, math.min(i + 999, #fields)))
  end
  return n
end
-- adds n to the slot's count f
local function count(f, n)
  if n ~= 0 then redis.call('HINCRBY', STATS, f, n) end
end
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
-- the host's record at t (a back-off whose level was forgiven is gone)
local function pol(t)
  local p = redis.call('HMGET', POL, 'n', 'next', 'g', 'bu', 'bl', 'ku', 'bc', 'bd', 'kd')
  local P = {n = tonumber(p[1] or '0'), next = tonumber(p[2] or '0'), g = tonumber(p[3] or '0'),
    bu = tonumber(p[4] or '0'), bl = tonumber(p[5] or '0'), ku = tonumber(p[6] or '0'), bc = p[7] or '',
    bd = tonumber(p[8] or '0'), kd = tonumber(p[9] or '0')}
  if P.bd > 0 then
    P.bu = math.min(P.bu, t + P.bd)
    P.ku = math.min(P.ku, math.max(P.bu, t + P.kd))
  end
  if P.ku <= t then
    P.bu, P.bl, P.ku, P.bc, P.bd, P.kd = 0, 0, 0, '', 0, 0
  end
  return P
end
-- writes the record back; with nothing leased it expires once its next
-- time has passed and its back-off level is forgiven (kept a second
-- longer)
local function setPol(P, t)
  P.n = math.max(P.n, 0)
  local keep = math.max(P.next, P.ku)
  if P.n == 0 and keep <= t then
    redis.call('DEL', POL)
    return
  end
  if P.ku > t then
    redis.call('HSET', POL, 'n', num(P.n), 'next', num(P.next), 'g', num(P.g),
      'bu', num(P.bu), 'bl', num(P.bl), 'ku', num(P.ku), 'bc', P.bc, 'bd', num(P.bd), 'kd', num(P.kd))
  else
    redis.call('HSET', POL, 'n', num(P.n), 'next', num(P.next), 'g', num(P.g))
    redis.call('HDEL', POL, 'bu', 'bl', 'ku', 'bc', 'bd', 'kd')
  end
  if P.n == 0 then
    redis.call('PEXPIRE', POL, num(math.ceil((keep - t) / 1000) + 1000))
  else
    redis.call('PERSIST', POL)
  end
end
-- frees k of the host's polite slots (leases ended uncharged)
local function free(k)
  if k <= 0 then return end
  local t = now()
  local P = pol(t)
  P.n = P.n - k
  setPol(P, t)
end
-- the back-off part of an answer: µs to its end, level, µs to its
-- forgiveness, who moved its end
local function backoff(P, t)
  if P.bu <= t then return {'0', '0', '0', ''} end
  return {num(P.bu - t), num(P.bl), num(P.ku - t), P.bc}
end

if op == 'claim' then
  local want, cap, gap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local t = now()
  local P = pol(t)
  local out = {'0', '0'}
  for _, x in ipairs(backoff(P, t)) do out[#out + 1] = x end
  out[7], out[8] = '0', num(P.n)
  if P.bu > t then
    local pq = redis.call('LLEN', PQ)
    out[1], out[7] = num(redis.call('LLEN', JQ) + pq), num(pq)
    return out
  end
  -- pops up to k entries of q into the leases l and answers how many
  -- leases it made: an entry whose key C already leases here (the same
  -- job queued twice, as by a push sent again) is dropped, the job
  -- leased once, so a polite slot is taken per lease, freed by its end;
  -- every entry popped leaves the slot's queued count
  local function take(q, l, k)
    if k <= 0 then return 0 end
    local got = redis.call('LPOP', q, k)
    if not got then return 0 end
    count('q', -#got)
    local leased = 0
    for _, e in ipairs(got) do
      local sp = string.find(e, ' ', 1, true)
      if sp and redis.call('HSETNX', l, string.sub(e, 1, sp - 1), e) == 1 then
        out[#out + 1] = e
        leased = leased + 1
      end
    end
    return leased
  end
  if redis.call('LLEN', PQ) > 0 then
    local n = P.n
    gap = math.max(gap, P.g)
    P.g = gap
    -- next was set on the clock of the master of the time; after a
    -- failover to one whose clock is behind, a host waits at most an
    -- interval (none without one), not the skew
    local most = t
    if gap > 0 then most = t + gap end
    if P.next > most then
      P.next = most
      setPol(P, t)
    end
    local k = want
    if cap > 0 then k = math.min(k, cap - n) end
    if gap > 0 then k = math.min(k, 1) end
    if P.next > t then k = 0 end
    local got = take(PQ, PL, k)
    if got > 0 then
      if gap > 0 then P.next = t + gap end
      P.n = n + got
      setPol(P, t)
    end
    local pq = redis.call('LLEN', PQ)
    if P.next > t and pq > 0 and (cap == 0 or n + got < cap) then
      out[2] = num(P.next - t)
    end
    out[7], out[8] = num(pq), num(n + got)
    want = want - got
  end
  take(JQ, JL, want)
  out[1] = num(redis.call('LLEN', JQ) + redis.call('LLEN', PQ))
  return out
elseif op == 'finish' then
  local gap, seq, c, k = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
  local fps = {unpack(ARGV, 6)}
  local ended = 0
  local freed = 0
  if #fps > 0 then
    freed = redis.call('HDEL', PL, unpack(fps))
    ended = freed + redis.call('HDEL', JL, unpack(fps))
  end
  if seq > tonumber(redis.call('HGET', STATS, 's:' .. c) or '0') then
    count('d', k)
    count('f', #fps - k)
    redis.call('HSET', STATS, 's:' .. c, seq)
  end
  if freed > 0 then
    local t = now()
    local P = pol(t)
    P.g = math.max(gap, P.g)
    if P.g > 0 then P.next = math.max(P.next, t + P.g) end
    P.n = P.n - freed
    setPol(P, t)
  end
  return ended
elseif op == 'push' then
  local k = tonumber(ARGV[2])
  for i = 3, #ARGV, 1000 do
    local last = math.min(i + 999, #ARGV)
    if i <= k + 2 then
      -- the polite ones, up to where the others start
      local pl = math.min(last, k + 2)
      redis.call('RPUSH', PQ, unpack(ARGV, i, pl))
      if pl < last then redis.call('RPUSH', JQ, unpack(ARGV, pl + 1, last)) end
    else
      redis.call('RPUSH', JQ, unpack(ARGV, i, last))
    end
  end
  count('q', #ARGV - 2)
  return #ARGV - 2
elseif op == 'unlease' then
  local back = 0
  for _, q in ipairs({{JL, JQ}, {PL, PQ}}) do
    local vals = redis.call('HVALS', q[1])
    for i = #vals, 1, -1 do
      redis.call('LPUSH', q[2], vals[i])
    end
    redis.call('DEL', q[1])
    back = back + #vals
    if q[1] == PL then free(#vals) end
  end
  count('q', back)
  -- C's finishes end with it
  redis.call('HDEL', STATS, 's:' .. ARGV[2])
  return back
elseif op == 'forget' then
  local known = {}
  for i = 2, #ARGV do known[ARGV[i]] = true end
  local back = 0
  for _, q in ipairs({{JL, JQ}, {PL, PQ}}) do
    local all = redis.call('HGETALL', q[1])
    local drop = {}
    for i = #all - 1, 1, -2 do
      if not known[all[i]] then
        drop[#drop + 1] = all[i]
        redis.call('LPUSH', q[2], all[i + 1])
      end
    end
    if #drop > 0 then
      hdel(q[1], drop)
      back = back + #drop
      if q[1] == PL then free(#drop) end
    end
  end
  count('q', back)
  return back
elseif op == 'backoff' then
  local t = now()
  local P = pol(t)
  local bd, kd = tonumber(ARGV[2]), tonumber(ARGV[4])
  if t + bd > P.bu then
    P.bu = t + bd
    P.bc = ARGV[5]
  end
  P.bl = math.max(P.bl, tonumber(ARGV[3]))
  P.ku = math.max(P.ku, P.bu, t + kd)
  P.bd, P.kd = math.max(P.bd, bd), math.max(P.kd, kd)
  setPol(P, t)
  return backoff(P, t)
elseif op == 'unfail' then
  count('f', -tonumber(ARGV[2]))
  return 0
elseif op == 'peek' then
  local t = now()
  return backoff(pol(t), t)
elseif op == 'wait' then
  local t = now()
  local P = pol(t)
  return {num(math.max(P.bu - t, 0)), num(math.max(P.next - t, 0))}
end
return redis.error_reply('drover queue: unknown operation ' .. tostring(op))
