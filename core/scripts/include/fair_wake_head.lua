-- Tells the fair queue's head, on its own channel, that the lock may be free.
-- Needs KEYS[2] queue and KEYS[4] channel prefix "redisson_lock__channel:{N}".
local function wake_head()
  local head = redis.call('lindex', KEYS[2], 0)
  if head then
    redis.call('publish', KEYS[4] .. ':' .. head, '0')
  end
end
