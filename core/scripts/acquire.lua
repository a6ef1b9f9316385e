-- Reentrant acquire (Redisson RLock layout), fenced when a token key is given, or non-reentrant
-- (Redisson's getNonReentrantLock: the same hash, a holder asking again is refused).
-- KEYS[1] lock hash; KEYS[2] (optional) fencing token counter "redisson_lock_token:{N}".
-- ARGV[1] lease ms, ARGV[2] owner "<client-id>:<thread-id>", ARGV[3] (optional) "1" for the
-- non-reentrant lock.
-- Returns {1, hold count, token or 0} when the owner now holds the lock, {0, pttl} when another
-- owner does, {-1, 0} when the owner of a non-reentrant lock asks for it again (nothing
-- changes). The token counter never expires and only grows, re-entries included.
-- @include next_token.lua
local lease = tonumber(ARGV[1])
if not lease or lease <= 0 or lease ~= math.floor(lease) then
  return redis.error_reply('ERR rlock: lease must be a positive whole number of milliseconds')
end
local free = redis.call('exists', KEYS[1]) == 0
local mine = not free and redis.call('hexists', KEYS[1], ARGV[2]) == 1
if mine and ARGV[3] == '1' then
  return {-1, 0}
end
if free or mine then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  local token = 0
  if KEYS[2] then
    token = next_token(KEYS[2])
  end
  return {1, count, token}
end
return {0, redis.call('pttl', KEYS[1])}
