-- Semaphore: takes every available permit at once (Redisson's drainPermits): the count is set
-- to 0 (with SET, which drops any expiry, as in Redisson), a negative count included. Nothing
-- is published: nobody can acquire from 0.
-- KEYS[1] count "N".
-- Returns the count before, 0 when the semaphore does not exist (and then nothing changes).
-- @include read_count.lua
local count, problem = read_count(KEYS[1], 'semaphore')
if count == nil then
  return problem
end
if not count then
  return 0
end
redis.call('set', KEYS[1], '0')
return count
