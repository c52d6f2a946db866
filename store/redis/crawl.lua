#!lua
-- A crawl's page budget for the whole cluster (crawl.go). KEYS, on the
-- crawl's hash tag:
--   1 DEF      hash: the definition; field max is the page budget (absent
--              or 0: none)
--   2 N        hash: the crawl's counters; field pages counts the jobs
--              charged
--   3 CHARGED  set: the fingerprints charged (kept only for a budget, so a
--              job claimed again after its coordinator died is not
--              charged twice; at most the budget of them)
-- ARGV: the fingerprints of jobs just claimed. Answers, per job, 0 when it
-- may run (charged now or before, or no budget) or the budget when the
-- crawl has no page left for it.
local max = tonumber(redis.call('HGET', KEYS[1], 'max') or '0') or 0
local pages = tonumber(redis.call('HGET', KEYS[2], 'pages') or '0') or 0
local out = {}
local added = 0
for i = 1, #ARGV do
  out[i] = 0
  if max <= 0 then
    pages = pages + 1
    added = added + 1
  elseif redis.call('SISMEMBER', KEYS[3], ARGV[i]) == 0 then
    if pages < max then
      redis.call('SADD', KEYS[3], ARGV[i])
      pages = pages + 1
      added = added + 1
    else
      out[i] = max
    end
  end
end
if added > 0 then
  redis.call('HSET', KEYS[2], 'pages', pages)
end
return out
