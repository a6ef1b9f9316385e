-- Read lock release; idempotent under retry thanks to the unlock latch.
-- KEYS[1] lock hash, KEYS[2] channel "redisson_rwlock:{N}", KEYS[3] this owner's read-lease key
-- prefix, KEYS[4] the lease prefix of the lock ("{N}"), KEYS[5] unlock latch.
-- ARGV[1] owner, ARGV[2] latch expiry ms.
-- Returns the read holds left (0 = none), -1 when nobody holds the lock, -2 when this owner
-- holds no read lock on it.
-- @include store_latch.lua
-- @include rw_drop_read_hold.lua
local done = redis.call('get', KEYS[5])
if done then
  return tonumber(done)
end
local latch_ttl = tonumber(ARGV[2])
if not latch_ttl or latch_ttl <= 0 then
  return redis.error_reply('ERR rlock: invalid release arguments')
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  return -1
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -2
end
local left = drop_read_hold(ARGV[1], mode)
store_latch(KEYS[5], left, ARGV[2])
return left
