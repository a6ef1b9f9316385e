-- Takes away an owner's newest read hold (its count goes down by one, and that hold's lease
-- key goes), then keeps the hash as long as the longest read lease left. When no reader's lease
-- is alive and no writer holds the lock, the hash is deleted and the waiters are told.
-- Needs KEYS[1] lock hash, KEYS[2] channel "redisson_rwlock:{N}", KEYS[3] the owner's read-lease
-- key prefix, KEYS[4] the lease prefix of the lock ("{N}").
-- Returns the owner's read holds left, 0 when the hash was deleted.
local function drop_read_hold(owner, mode)
  local left = redis.call('hincrby', KEYS[1], owner, -1)
  if left == 0 then
    redis.call('hdel', KEYS[1], owner)
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
      return left
    end
  end
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], '0')
  return 0
end
