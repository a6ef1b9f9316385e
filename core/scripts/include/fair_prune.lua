-- Drops queue heads whose deadline passed: waiters that stopped coming back. Only heads are
-- examined, and the other deadlines are left alone (Redisson's rule).
-- Needs KEYS[2] queue, KEYS[3] deadlines, and `now` (ms since the epoch) defined before.
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if not head then break end
  local deadline = redis.call('zscore', KEYS[3], head)
  if deadline and tonumber(deadline) <= now then
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
