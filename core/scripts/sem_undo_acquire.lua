-- Semaphore: settles an acquire (sem_try_acquire with a latch) whose replies were lost. If its
-- latch records the grant, the permits go back as sem_release gives them (INCRBY, the new count
-- published when positive; nothing when the semaphore is gone, which must not come back). If
-- the latch is missing the request has not run: a tombstone latch makes it refused should it
-- still arrive (held in a paused server's buffer), since nobody would give its permits back.
-- KEYS[1] count "N", KEYS[2] channel "redisson_sc:{N}", KEYS[3] the request's latch
-- "redisson_unlock_latch:{N}:<id>".
-- ARGV[1] permits (1 to 2^31-1), ARGV[2] latch expiry ms.
-- Returns 1 when the permits were given back, 0 when the tombstone was written, -1 when the
-- request was settled before (a repeat of this clean-up changes nothing).
-- @include whole_arg.lua
-- @include read_count.lua
local permits = whole_arg(ARGV[1], 1, 2147483647)
if not permits then
  return redis.error_reply('ERR rlock: permits must be a whole number from 1 to 2147483647')
end
if not whole_arg(ARGV[2], 1, 999999999999999) then
  return redis.error_reply('ERR rlock: latch expiry must be a positive whole number of ms')
end
local done = redis.call('get', KEYS[3])
if done and done ~= '1' then
  return -1
end
local count, problem = read_count(KEYS[1], 'semaphore')
if count == nil then
  return problem
end
-- The latch first: if this write is refused (out of memory) nothing is given back, and a
-- repeat cannot give back twice. '0' is what sem_try_acquire answers for a refusal.
redis.call('set', KEYS[3], '0', 'px', ARGV[2])
if not done then
  return 0
end
if count then
  local available = redis.call('incrby', KEYS[1], permits)
  if available > 0 then
    redis.call('publish', KEYS[2], tostring(available))
  end
end
return 1
