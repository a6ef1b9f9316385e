-- Write lock release; idempotent under retry thanks to the unlock latch.
-- KEYS[1] lock hash, KEYS[2] channel "redisson_rwlock:{N}", KEYS[3] unlock latch.
-- ARGV[1] lease ms re-applied while holds remain, ARGV[2] writer "<owner>:write",
-- ARGV[3] latch expiry ms.
-- Returns the write holds left (0 = none), -1 when nobody holds the lock, -2 when this owner
-- does not hold the write lock.
local done = redis.call('get', KEYS[3])
if done then
  return tonumber(done)
end
local lease, latch_ttl = tonumber(ARGV[1]), tonumber(ARGV[3])
if not lease or lease <= 0 or not latch_ttl or latch_ttl <= 0 then
  return redis.error_reply('ERR rlock: invalid release arguments')
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  return -1
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return -2
end
local left = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if left > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
else
  left = 0
  redis.call('hdel', KEYS[1], ARGV[2])
  if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
  else
    -- The writer still holds read locks it took while writing: it now only reads.
    redis.call('hset', KEYS[1], 'mode', 'read')
  end
  -- Readers and writers may all proceed now: wake every waiter.
  redis.call('publish', KEYS[2], '1')
end
-- @include store_latch.lua
store_latch(KEYS[3], left, ARGV[3])
return left
