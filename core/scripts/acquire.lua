-- Reentrant acquire (Redisson RLock layout).
-- KEYS[1] lock hash. ARGV[1] lease ms, ARGV[2] owner "<client-id>:<thread-id>".
-- Returns {1, hold count} when the owner now holds the lock, {0, pttl} when another owner does.
local lease = tonumber(ARGV[1])
if not lease or lease <= 0 or lease ~= math.floor(lease) then
  return redis.error_reply('ERR rlock: lease must be a positive whole number of milliseconds')
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {1, count}
end
return {0, redis.call('pttl', KEYS[1])}
