-- Semaphore: takes permits if that many are available, without waiting. The count goes down by
-- DECRBY, which keeps its expiry (as Redisson's tryAcquire). Nothing is published.
-- KEYS[1] count "N", KEYS[2] (optional) the request's latch "redisson_unlock_latch:{N}:<id>".
-- ARGV[1] permits (1 to 2^31-1), ARGV[2] latch expiry ms (with the latch).
-- Returns 1 when taken, 0 when fewer are available, -1 when the semaphore does not exist (it
-- was never set, or expired). With a latch a grant is stored there, and a retry of the same
-- request (its reply was lost) gets it back instead of taking permits twice. A latch of 0 is
-- the tombstone of a request undone by sem_undo_acquire.lua: a late copy is refused.
-- @include whole_arg.lua
-- @include read_count.lua
-- @include store_latch.lua
if KEYS[2] then
  local done = redis.call('get', KEYS[2])
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
local result
if not count then
  result = -1
elseif count >= permits then
  redis.call('decrby', KEYS[1], ARGV[1])
  result = 1
else
  result = 0
end
-- Only a grant is remembered: a retry of a refusal may simply try again, and a waiter's many
-- refused attempts then write nothing.
if KEYS[2] and result == 1 then
  store_latch(KEYS[2], result, ARGV[2])
end
return result
