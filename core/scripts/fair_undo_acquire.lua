-- Undoes a fair acquire whose reply was lost, if it was applied: takes back exactly the hold it
-- granted, as a release would, waking the queue's head on its own channel when the lock is free.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel prefix
-- "redisson_lock__channel:{N}" (the head listens on "<prefix>:<owner>").
-- ARGV[1] owner, ARGV[2] the hold count that acquire would have produced, ARGV[3] lease ms,
-- ARGV[4] now (ms since the epoch).
-- Returns 1 when the acquire had been applied and is now undone, 0 when it never happened.
local expected, now = tonumber(ARGV[2]), tonumber(ARGV[4])
if not expected or not now then
  return redis.error_reply('ERR rlock: invalid undo arguments')
end
-- @include fair_prune.lua
-- @include fair_wake_head.lua
if tonumber(redis.call('hget', KEYS[1], ARGV[1])) ~= expected then
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
  wake_head()
end
return 1
