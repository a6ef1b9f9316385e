-- Semaphore (Redisson RSemaphore): sets the permits of a semaphore that does not exist yet.
-- KEYS[1] count "N", KEYS[2] channel "redisson_sc:{N}".
-- ARGV[1] permits (0 to 2^31-1: Redisson reads the count as a Java int), ARGV[2] (optional)
-- expiry ms of the semaphore (Redisson's trySetPermits with a time to live).
-- Returns 1 when set (the count is published), 0 when the semaphore already exists.
-- @include whole_arg.lua
-- @include read_count.lua
local permits = whole_arg(ARGV[1], 0, 2147483647)
if not permits then
  return redis.error_reply('ERR rlock: permits must be a whole number from 0 to 2147483647')
end
local ttl = nil
if ARGV[2] then
  ttl = whole_arg(ARGV[2], 1, 999999999999999)
  if not ttl then
    return redis.error_reply('ERR rlock: expiry must be a positive whole number of milliseconds')
  end
end
local count, problem = read_count(KEYS[1], 'semaphore')
if count == nil then
  return problem
end
if count then
  return 0
end
if ttl then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
else
  redis.call('set', KEYS[1], ARGV[1])
end
redis.call('publish', KEYS[2], ARGV[1])
return 1
