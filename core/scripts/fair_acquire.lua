-- Fair acquire (Redisson RFairLock layout): first come, first served.
-- KEYS[1] lock hash, KEYS[2] queue "redisson_lock_queue:{N}", KEYS[3] deadlines
-- "redisson_lock_timeout:{N}", KEYS[4] (optional) fencing token counter.
-- ARGV[1] lease ms, ARGV[2] owner, ARGV[3] wait allowance ms, ARGV[4] now (ms since the epoch),
-- ARGV[5] "1" to join the queue when the lock cannot be had, "0" to only try, ARGV[6]
-- (optional) "1" for the non-reentrant fair lock (Redisson's getNonReentrantFairLock).
-- Returns {1, hold count, token or 0} when held, {-1, 0} when the owner of a non-reentrant lock
-- asks for it again (only the pruning changes anything), else {0, ms to sleep at most or -1}.
local lease, allowance, now = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not lease or lease <= 0 or lease ~= math.floor(lease) then
  return redis.error_reply('ERR rlock: lease must be a positive whole number of milliseconds')
end
if not allowance or allowance <= 0 or not now then
  return redis.error_reply('ERR rlock: invalid fair acquire arguments')
end
-- @include fair_prune.lua
-- @include next_token.lua
local function granted(count)
  local token = 0
  if KEYS[4] then
    token = next_token(KEYS[4])
  end
  return {1, count, token}
end
if redis.call('exists', KEYS[1]) == 0 and
    (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  -- Everyone behind moves up one place: their deadlines need one allowance less.
  for _, waiter in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
    redis.call('zincrby', KEYS[3], -allowance, waiter)
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return granted(count)
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if ARGV[6] == '1' then
    return {-1, 0}
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return granted(count)
end
local pttl = redis.call('pttl', KEYS[1])
-- The holder's remaining lease (0: it ends within the millisecond, so come back at once); -1
-- when it has none (no expiry set, or the key is gone).
local hint = -1
if pttl >= 0 then
  hint = pttl
end
if ARGV[5] ~= '1' then
  return {0, hint}
end
local queued = redis.call('zscore', KEYS[3], ARGV[2])
if queued then
  -- A waiter that comes back is alive: when its deadline is near, push it back (never
  -- forward), so only a waiter that stopped coming back is ever dropped as stale. Waiters come
  -- back at least every quarter allowance, so one visit always falls in the last half.
  local refreshed = now + math.max(pttl, 0) + allowance
  if tonumber(queued) - now < allowance / 2 and refreshed > tonumber(queued) then
    redis.call('zadd', KEYS[3], refreshed, ARGV[2])
  end
  return {0, hint}
end
-- Join the tail, with a deadline one allowance after the waiter ahead (or the holder's lease).
local tail = redis.call('lindex', KEYS[2], -1)
local tail_deadline = tail and tail ~= ARGV[2] and redis.call('zscore', KEYS[3], tail)
local wait_before
if tail_deadline then
  wait_before = tonumber(tail_deadline) - now
else
  wait_before = pttl
end
if redis.call('zadd', KEYS[3], wait_before + allowance + now, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return {0, hint}
