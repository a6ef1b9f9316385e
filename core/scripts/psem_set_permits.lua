-- Permit-expirable semaphore: sets the total of permits, available plus held (Redisson's
-- setPermits). A missing count is set to the total as it is (Redisson does so too: ids left in
-- the deadline set are not counted then). Otherwise expired permits are given back first, then
-- the count moves by the difference between the total asked for and available + held: it goes
-- below 0 when more permits are held than the new total, and reaches the total as they are
-- given back. Nothing is written when the total is already right.
-- KEYS[1] count "N", KEYS[2] deadlines "{N}:timeout", KEYS[3] channel "redisson_sc:{N}".
-- ARGV[1] now (ms since the epoch), ARGV[2] the total (0 to 2^31-1).
-- Returns {available now, held now}. The new count is published when the script changed it and
-- it is positive (Redisson publishes the total whenever it changes something; a waiter treats
-- any message as "try again").
-- @include whole_arg.lua
-- @include read_count.lua
-- @include psem_check_keys.lua
-- @include psem_reclaim.lua
local now = whole_arg(ARGV[1], 1, 922337203685476)
if not now then
  return redis.error_reply('ERR rlock: now must be a positive whole number of ms since the epoch')
end
local total = whole_arg(ARGV[2], 0, 2147483647)
if not total then
  return redis.error_reply('ERR rlock: permits must be a whole number from 0 to 2147483647')
end
local count, problem = check_psem_keys()
if count == nil then
  return problem
end
if not count then
  redis.call('set', KEYS[1], ARGV[2])
  if total > 0 then
    redis.call('publish', KEYS[3], ARGV[2])
  end
  return {total, redis.call('zcard', KEYS[2])}
end
if reclaim_expired(ARGV[1], nil) > 0 then
  count = tonumber(redis.call('get', KEYS[1]))
end
local held = redis.call('zcard', KEYS[2])
local available = total - held
if available < -2147483648 then
  return redis.error_reply('ERR rlock: ' .. held .. ' permits are held: the count of available ' ..
                           'permits would leave the range of a 32-bit integer')
end
if available ~= count then
  redis.call('incrby', KEYS[1], available - count)
  if available > 0 then
    redis.call('publish', KEYS[3], tostring(available))
  end
end
return {available, held}
