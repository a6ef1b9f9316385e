-- Write lock acquire (Redisson RReadWriteLock layout).
-- KEYS[1] lock hash. ARGV[1] lease ms, ARGV[2] writer "<owner>:write", ARGV[3] the same owner
-- as a reader "<owner>".
-- Returns {1, write holds, 0} when granted, {0, pttl} when held by others, {-1, 0} when the
-- owner holds a read lock: upgrading is refused, since it would wait for itself.
local lease = tonumber(ARGV[1])
if not lease or lease <= 0 or lease ~= math.floor(lease) then
  return redis.error_reply('ERR rlock: lease must be a positive whole number of milliseconds')
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {1, 1, 0}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {1, count, 0}
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  return {-1, 0}
end
return {0, redis.call('pttl', KEYS[1])}
