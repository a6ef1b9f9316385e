-- Semaphore: adds permits, or takes them away with a negative amount (Redisson's addPermits and
-- reducePermits); a missing semaphore counts as 0, and the count may go below 0. Written with
-- SET, so any expiry of the semaphore is dropped, as in Redisson. The new count is published
-- when positive (Redisson publishes it whatever it is; see sem_release.lua).
-- KEYS[1] count "N", KEYS[2] channel "redisson_sc:{N}".
-- ARGV[1] change (non-zero, from -2^31+1 to 2^31-1, and the new count within a Java int).
-- Returns the new count.
-- @include whole_arg.lua
-- @include read_count.lua
local change = whole_arg(ARGV[1], -2147483647, 2147483647)
if not change or change == 0 then
  return redis.error_reply('ERR rlock: the change of permits must be a non-zero whole number ' ..
                           'from -2147483647 to 2147483647')
end
local count, problem = read_count(KEYS[1], 'semaphore')
if count == nil then
  return problem
end
local available = (count or 0) + change
if available > 2147483647 or available < -2147483648 then
  return redis.error_reply('ERR rlock: the count of permits would leave the range of a 32-bit ' ..
                           'integer')
end
redis.call('set', KEYS[1], tostring(available))
if available > 0 then
  redis.call('publish', KEYS[2], tostring(available))
end
return available
