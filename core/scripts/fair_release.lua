-- Fair release: like release.lua, but wakes only the queue head, on its own channel.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel prefix
-- "redisson_lock__channel:{N}" (the head listens on "<prefix>:<owner>"), KEYS[5] unlock latch.
-- ARGV[1] lease ms re-applied while holds remain, ARGV[2] owner, ARGV[3] holds to release,
-- ARGV[4] latch expiry ms, ARGV[5] now (ms since the epoch).
-- Returns the holds left (0 = unlocked), -1 when nobody holds the lock, -2 when another owner
-- holds it.
local done = redis.call('get', KEYS[5])
if done then
  return tonumber(done)
end
local lease, count, latch_ttl, now =
    tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if not lease or lease <= 0 or not count or count <= 0 or not latch_ttl or latch_ttl <= 0 or
    not now then
  return redis.error_reply('ERR rlock: invalid release arguments')
end
-- @include fair_prune.lua
-- @include fair_wake_head.lua
local held = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not held then
  if redis.call('exists', KEYS[1]) == 1 then
    return -2
  end
  wake_head()  -- free already (expired): make sure the head knows
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
  wake_head()
end
-- @include store_latch.lua
store_latch(KEYS[5], left, ARGV[4])
return left
