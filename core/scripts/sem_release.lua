-- Semaphore: gives permits back. The count goes up by INCRBY, which keeps its expiry, and the
-- new count is published when positive: a Redisson waiter wakes up to that many of its threads
-- (a count of 0 or less wakes nobody, and a negative message would fail Redisson's listener).
-- KEYS[1] count "N", KEYS[2] channel "redisson_sc:{N}", KEYS[3] (optional) the request's latch.
-- ARGV[1] permits (1 to 2^31-1), ARGV[2] latch expiry ms (with the latch).
-- Returns the new count; -1 when the semaphore does not exist, and then nothing changes (unlike
-- Redisson's release, which would create it: permits given back to a semaphore that expired or
-- was deleted must not bring it back). With a latch, a retried request is applied once (a
-- missing semaphore's -1 is kept there too).
-- @include whole_arg.lua
-- @include read_count.lua
-- @include store_latch.lua
if KEYS[3] then
  local done = redis.call('get', KEYS[3])
  if done then
    return tonumber(done)
  end
  if not whole_arg(ARGV[2], 1, 999999999999999) then
    return redis.error_reply('ERR rlock: latch expiry must be a positive whole number of ms')
  end
end
local permits = whole_arg(ARGV[1], 1, 2147483647)
if not permits then
  return redis.error_reply('ERR rlock: permits must be a whole number from 1 to 2147483647')
end
local count, problem = read_count(KEYS[1], 'semaphore')
if count == nil then
  return problem
end
if not count then
  -- Remembered too: a late copy must not give permits to a semaphore set up again meanwhile.
  if KEYS[3] then
    store_latch(KEYS[3], -1, ARGV[2])
  end
  return -1
end
if count + permits > 2147483647 then
  return redis.error_reply('ERR rlock: releasing ' .. permits .. ' permits would make the ' ..
                           'count exceed 2147483647')
end
local available = redis.call('incrby', KEYS[1], ARGV[1])
if available > 0 then
  redis.call('publish', KEYS[2], tostring(available))
end
if KEYS[3] then
  store_latch(KEYS[3], available, ARGV[2])
end
return available
