-- Reentrant acquire (Redisson RLock layout), fenced when a token key is given.
-- KEYS[1] lock hash; KEYS[2] (optional) fencing token counter "redisson_lock_token:{N}".
-- ARGV[1] lease ms, ARGV[2] owner "<client-id>:<thread-id>".
-- Returns {1, hold count, token or 0} when the owner now holds the lock, {0, pttl} when another
-- owner does. The token counter never expires and only grows, re-entries included.
-- @include next_token.lua
local lease = tonumber(ARGV[1])
if not lease or lease <= 0 or lease ~= math.floor(lease) then
  return redis.error_reply('ERR rlock: lease must be a positive whole number of milliseconds')
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  local token = 0
  if KEYS[2] then
    token = next_token(KEYS[2])
  end
  return {1, count, token}
end
return {0, redis.call('pttl', KEYS[1])}
