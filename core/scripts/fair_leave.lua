-- A fair-lock waiter gives up: it leaves the queue and everyone behind it moves up.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel prefix.
-- ARGV[1] owner, ARGV[2] its wait allowance ms. Returns 1 if it was queued, else 0.
local allowance = tonumber(ARGV[2])
if not allowance then
  return redis.error_reply('ERR rlock: invalid fair leave arguments')
end
local queue = redis.call('lrange', KEYS[2], 0, -1)
local position = nil
for i, waiter in ipairs(queue) do
  if waiter == ARGV[1] then
    position = i
    break
  end
end
if not position then
  redis.call('zrem', KEYS[3], ARGV[1])
  return 0
end
for i = position + 1, #queue do
  redis.call('zincrby', KEYS[3], -allowance, queue[i])
end
redis.call('zrem', KEYS[3], ARGV[1])
redis.call('lrem', KEYS[2], 0, ARGV[1])
-- The head left a free lock: tell the new head rather than let it find out by polling.
if position == 1 and redis.call('exists', KEYS[1]) == 0 and queue[2] then
  redis.call('publish', KEYS[4] .. ':' .. queue[2], '0')
end
return 1
