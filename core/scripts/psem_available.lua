-- Permit-expirable semaphore: how many permits are available and how many are held, after
-- giving expired permits back (which publishes, as Redisson's availablePermits does: this is
-- how a dead holder's permit comes back when nobody acquires).
-- KEYS[1] count "N", KEYS[2] deadlines "{N}:timeout", KEYS[3] channel "redisson_sc:{N}".
-- ARGV[1] now (ms since the epoch).
-- Returns {available, held, 1 when the semaphore exists else 0}; a missing semaphore has
-- {0, held, 0} (Redisson reads it as 0 available).
-- @include whole_arg.lua
-- @include read_count.lua
-- @include psem_check_keys.lua
-- @include psem_reclaim.lua
local now = whole_arg(ARGV[1], 1, 922337203685476)
if not now then
  return redis.error_reply('ERR rlock: now must be a positive whole number of ms since the epoch')
end
local count, problem = check_psem_keys()
if count == nil then
  return problem
end
if not count then
  return {0, redis.call('zcard', KEYS[2]), 0}
end
if reclaim_expired(ARGV[1], nil) > 0 then
  count = tonumber(redis.call('get', KEYS[1]))
end
return {count, redis.call('zcard', KEYS[2]), 1}
