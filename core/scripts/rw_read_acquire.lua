-- Read lock acquire (Redisson RReadWriteLock layout).
-- KEYS[1] lock hash (field 'mode' = 'read' | 'write'), KEYS[2] this owner's read-lease key prefix
-- "{N}:<owner>:rwlock_timeout" (hold k has its own lease key "<prefix>:k").
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] the same owner as a writer ("<owner>:write").
-- Returns {1, read holds, 0} when granted, {0, pttl} when a writer holds the lock.
local lease = tonumber(ARGV[1])
if not lease or lease <= 0 or lease ~= math.floor(lease) then
  return redis.error_reply('ERR rlock: lease must be a positive whole number of milliseconds')
end
local mode = redis.call('hget', KEYS[1], 'mode')
-- Readers share; a writer may also read (downgrade).
if mode == false or mode == 'read' or
    (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. count, 1, 'px', ARGV[1])
  -- The hash lives as long as its longest reader lease.
  local remaining = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(remaining, lease))
  return {1, count, 0}
end
return {0, redis.call('pttl', KEYS[1])}
