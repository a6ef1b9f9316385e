-- Resets the lease of a held lock.
-- KEYS[1] lock hash. ARGV[1] lease ms, ARGV[2] owner.
-- Returns 1 when extended, -1 when nobody holds the lock, -2 when another owner holds it.
local lease = tonumber(ARGV[1])
if not lease or lease <= 0 or lease ~= math.floor(lease) then
  return redis.error_reply('ERR rlock: lease must be a positive whole number of milliseconds')
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  if redis.call('exists', KEYS[1]) == 1 then
    return -2
  end
  return -1
end
redis.call('pexpire', KEYS[1], ARGV[1])
return 1
