-- Read lock release; idempotent under retry thanks to the unlock latch.
-- KEYS[1] lock hash, KEYS[2] channel "redisson_rwlock:{N}", KEYS[3] this owner's read-lease key
-- prefix, KEYS[4] the lease key prefix of the lock ("{N}"), KEYS[5] unlock latch.
-- ARGV[1] owner, ARGV[2] latch expiry ms.
-- Returns the read holds left (0 = none), -1 when nobody holds the lock, -2 when this owner
-- holds no read lock on it.
-- @include store_latch.lua
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
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left == 0 then
  redis.call('hdel', KEYS[1], ARGV[1])
end
redis.call('del', KEYS[3] .. ':' .. (left + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  -- Others still hold it: keep the hash as long as their longest read lease.
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local holds = tonumber(redis.call('hget', KEYS[1], field))
    if holds then
      for k = holds, 1, -1 do
        longest = math.max(longest,
                           redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. k))
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
  end
  if longest > 0 or mode == 'write' then
    store_latch(KEYS[5], left, ARGV[2])
    return left
  end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
store_latch(KEYS[5], 0, ARGV[2])
return 0
