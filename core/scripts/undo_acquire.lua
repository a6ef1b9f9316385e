-- Undoes an acquire whose reply was lost, if it was applied.
-- KEYS[1] lock hash, KEYS[2] wake-up channel.
-- ARGV[1] owner, ARGV[2] the hold count that acquire would have produced, ARGV[3] lease ms.
-- Returns 1 when the acquire had been applied and is now undone, 0 when it never happened.
local expected = tonumber(ARGV[2])
if not expected or tonumber(redis.call('hget', KEYS[1], ARGV[1])) ~= expected then
  return 0
end
if expected > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('pexpire', KEYS[1], ARGV[3])
  return 1
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 0 then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], '0')
end
return 1
