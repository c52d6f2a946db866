#!lua
-- Claim (queue.go): lease up to ARGV[1] of one host's queued jobs to one
-- coordinator, oldest first. KEYS:
--   1 JQ  list: the host's queued jobs, entries "FP JSON"
--   2 JL  hash: FP -> entry, the host's jobs leased to the coordinator
-- Returns the number of jobs left in JQ, then the entries claimed.
local n = tonumber(ARGV[1])
local got = redis.call('LPOP', KEYS[1], n)
local out = {'0'}
if got then
  for _, e in ipairs(got) do
    local sp = string.find(e, ' ', 1, true)
    if sp then
      redis.call('HSET', KEYS[2], string.sub(e, 1, sp - 1), e)
      out[#out + 1] = e
    end
  end
end
out[1] = tostring(redis.call('LLEN', KEYS[1]))
return out
