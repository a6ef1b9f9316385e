-- Releases holds of one owner; idempotent under retry thanks to the unlock latch.
-- KEYS[1] lock hash, KEYS[2] wake-up channel, KEYS[3] unlock latch for this request.
-- ARGV[1] lease ms re-applied while holds remain, ARGV[2] owner, ARGV[3] holds to release,
-- ARGV[4] latch expiry ms.
-- Returns the holds left (0 = unlocked), -1 when nobody holds the lock, -2 when another owner
-- holds it.
local done = redis.call('get', KEYS[3])
if done then
  return tonumber(done)
end
local lease, count, latch_ttl = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not lease or lease <= 0 or not count or count <= 0 or not latch_ttl or latch_ttl <= 0 then
  return redis.error_reply('ERR rlock: invalid release arguments')
end
local held = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not held then
  if redis.call('exists', KEYS[1]) == 1 then
    return -2
  end
  return -1
end
local left = held - count
if left > 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], -count)
  redis.call('pexpire', KEYS[1], ARGV[1])
else
  -- The last hold goes with DEL, which a server out of memory still runs (HINCRBY it refuses).
  left = 0
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], '0')
end
-- @include store_latch.lua
store_latch(KEYS[3], left, ARGV[4])
return left
