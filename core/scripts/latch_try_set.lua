-- Count-down latch (Redisson RCountDownLatch): sets the count of a latch that does not exist
-- (a missing latch is open, count 0), and tells waiters it is closed again with message "1".
-- KEYS[1] count "N", KEYS[2] channel "redisson_countdownlatch__channel__{N}".
-- ARGV[1] count (1 to 10^15 - 1; Redisson takes any long, 0 and negatives included).
-- Returns 1 when set, 0 when the latch exists already.
-- @include whole_arg.lua
-- @include read_count.lua
if not whole_arg(ARGV[1], 1, 999999999999999) then
  return redis.error_reply('ERR rlock: the count must be a whole number from 1 to 999999999999999')
end
local count, problem = read_count(KEYS[1], 'latch')
if count == nil then
  return problem
end
if count then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], '1')
return 1
