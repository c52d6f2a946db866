#!lua
-- Unlease (queue.go): a dead coordinator's leased jobs on one host go back
-- to the front of the host's queue, uncharged. KEYS:
--   1 JL  hash: FP -> entry, the host's jobs leased to the dead coordinator
--   2 JQ  list: the host's queued jobs
-- Returns how many went back. Running it twice is harmless: JL is gone.
local vals = redis.call('HVALS', KEYS[1])
for i = #vals, 1, -1 do
  redis.call('LPUSH', KEYS[2], vals[i])
end
redis.call('DEL', KEYS[1])
return #vals
