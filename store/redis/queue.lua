#!lua
-- The shared job queue's transitions on one host's keys (queue.go). An
-- entry is "FP JSON": the key's fingerprint, a space, the job. KEYS:
--   1 JQ   list: the host's queued jobs politeness does not apply to
--   2 JL   hash: FP -> entry, those leased to coordinator C
--   3 PQ   list: the host's queued jobs politeness applies to
--   4 PL   hash: FP -> entry, those leased to C
--   5 POL  hash: the host's politeness across every coordinator:
--            n     its polite jobs leased (to any coordinator)
--            next  µs on this server's clock before which no polite job
--                  of the host is claimed (at most an interval ahead: a
--                  claim after a failover to a master whose clock is
--                  behind clamps it)
--            g     the longest interval µs a coordinator gave while the
--                  record lived (one whose workers read the host's
--                  robots.txt Crawl-delay gives it), applied by every
--                  coordinator
-- ARGV: 1 op, then the operation's own arguments.
--   claim  2 the most jobs to take, 3 the host's cap (0 none), 4 its
--          interval µs (0 none). Polite jobs first, at most cap - n of
--          them, and one per interval; then the others. Answers the jobs
--          left in JQ and PQ, the µs until the host's next polite claim
--          when polite jobs wait for its interval (0 otherwise), then the
--          entries claimed (now in JL, PL).
--   finish 2 the host's interval µs, then FPs: ends C's leases of them; a
--          polite one frees its slot and the host's next claim waits an
--          interval from now. Answers how many leases ended.
--   unlease (C is dead, or stopping) every job leased to C goes back to the
--          front of its queue, uncharged, its slots freed. Answers how many.
--          Running it twice is harmless: JL and PL are gone.
--   forget 2.. the FPs of the host's jobs C knows it holds (claimed, not
--          finished): every other job leased to C (one a claim whose
--          answer C did not get leased) goes back to the front of its
--          queue, uncharged, its slot freed. Answers how many. Harmless
--          twice, and when the claim had not run.
-- Time is the server's (TIME): every script on one host runs on the one
-- master holding the host's slot, so coordinators whose clocks disagree
-- still see one clock; the caller sends intervals, which no skew changes.
local JQ, JL, PQ, PL, POL = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
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
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function pol()
  local p = redis.call('HMGET', POL, 'n', 'next', 'g')
  return tonumber(p[1] or '0'), tonumber(p[2] or '0'), tonumber(p[3] or '0')
end
-- writes the politeness record back; with nothing leased it expires once
-- its next time has passed (kept a second longer)
local function setPol(n, nxt, g, t)
  n = math.max(n, 0)
  if n == 0 and nxt <= t then
    redis.call('DEL', POL)
    return
  end
  redis.call('HSET', POL, 'n', num(n), 'next', num(nxt), 'g', num(g))
  if n == 0 then
    redis.call('PEXPIRE', POL, num(math.ceil((nxt - t) / 1000) + 1000))
  else
    redis.call('PERSIST', POL)
  end
end

if op == 'claim' then
  local want, cap, gap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local out = {'0', '0'}
  local function take(q, l, k)
    if k <= 0 then return 0 end
    local got = redis.call('LPOP', q, k)
    if not got then return 0 end
    local set = {}
    for _, e in ipairs(got) do
      local sp = string.find(e, ' ', 1, true)
      if sp then
        set[#set + 1] = string.sub(e, 1, sp - 1)
        set[#set + 1] = e
        out[#out + 1] = e
      end
    end
    if #set > 0 then redis.call('HSET', l, unpack(set)) end
    return #got
  end
  if redis.call('LLEN', PQ) > 0 then
    local t = now()
    local n, nxt, g = pol()
    gap = math.max(gap, g)
    -- next was set on the clock of the master of the time; after a
    -- failover to one whose clock is behind, a host waits at most an
    -- interval (none without one), not the skew
    local most = t
    if gap > 0 then most = t + gap end
    if nxt > most then
      nxt = most
      setPol(n, nxt, gap, t)
    end
    local k = want
    if cap > 0 then k = math.min(k, cap - n) end
    if gap > 0 then k = math.min(k, 1) end
    if nxt > t then k = 0 end
    local got = take(PQ, PL, k)
    if got > 0 then
      if gap > 0 then nxt = t + gap end
      setPol(n + got, nxt, gap, t)
    end
    if nxt > t and redis.call('LLEN', PQ) > 0 and (cap == 0 or n + got < cap) then
      out[2] = num(nxt - t)
    end
    want = want - got
  end
  take(JQ, JL, want)
  out[1] = num(redis.call('LLEN', JQ) + redis.call('LLEN', PQ))
  return out
elseif op == 'finish' then
  local gap = tonumber(ARGV[2])
  local fps = {unpack(ARGV, 3)}
  local ended = 0
  local freed = 0
  if #fps > 0 then
    freed = redis.call('HDEL', PL, unpack(fps))
    ended = freed + redis.call('HDEL', JL, unpack(fps))
  end
  if freed > 0 then
    local t = now()
    local n, nxt, g = pol()
    gap = math.max(gap, g)
    if gap > 0 then nxt = math.max(nxt, t + gap) end
    setPol(n - freed, nxt, gap, t)
  end
  return ended
elseif op == 'unlease' then
  local back = 0
  for _, q in ipairs({{JL, JQ}, {PL, PQ}}) do
    local vals = redis.call('HVALS', q[1])
    for i = #vals, 1, -1 do
      redis.call('LPUSH', q[2], vals[i])
    end
    redis.call('DEL', q[1])
    back = back + #vals
    if q[1] == PL and #vals > 0 then
      local n, nxt, g = pol()
      setPol(n - #vals, nxt, g, now())
    end
  end
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
      if q[1] == PL then
        local n, nxt, g = pol()
        setPol(n - #drop, nxt, g, now())
      end
    end
  end
  return back
end
return redis.error_reply('drover queue: unknown operation ' .. tostring(op))
