-- Count-down latch: counts down by one. At 0 the key is deleted and message "0" opens the
-- latch for every waiter. A count already at 0 or below (Redisson's trySetCount stores any
-- long) is deleted without a message, as Redisson does: its waiters never waited.
-- KEYS[1] count "N", KEYS[2] channel "redisson_countdownlatch__channel__{N}".
-- Returns the count left (0 = open now), or -1 when the latch does not exist (already open;
-- nothing changes).
-- @include read_count.lua
local count, problem = read_count(KEYS[1], 'latch')
if count == nil then
  return problem
end
if not count then
  return -1
end
local left = redis.call('decr', KEYS[1])
if left <= 0 then
  redis.call('del', KEYS[1])
end
if left == 0 then
  redis.call('publish', KEYS[2], '0')
end
if left < 0 then
  return 0
end
return left
