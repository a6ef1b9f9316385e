-- Undoes a write acquire whose reply was lost, if it was applied: takes back exactly the hold
-- it granted, as its release would.
-- KEYS[1] lock hash, KEYS[2] channel "redisson_rwlock:{N}".
-- ARGV[1] writer "<owner>:write", ARGV[2] the write holds that acquire would have produced,
-- ARGV[3] lease ms, re-applied while holds remain.
-- Returns 1 when the acquire had been applied and is now undone, 0 when it never happened.
local expected = tonumber(ARGV[2])
if not expected or redis.call('hget', KEYS[1], 'mode') ~= 'write' or
    tonumber(redis.call('hget', KEYS[1], ARGV[1])) ~= expected then
  return 0
end
if expected > 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
  redis.call('pexpire', KEYS[1], ARGV[3])
  return 1
end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
else
  -- The writer still holds read locks it took while writing: it now only reads.
  redis.call('hset', KEYS[1], 'mode', 'read')
end
-- Readers and writers may all proceed now: wake every waiter, as a write release does.
redis.call('publish', KEYS[2], '1')
return 1
