-- Deletes a fair lock whoever holds it and wakes the queue head.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel prefix.
-- ARGV[1] now (ms since the epoch). Returns 1 if a lock was deleted, else 0.
local now = tonumber(ARGV[1])
if not now then
  return redis.error_reply('ERR rlock: invalid force unlock arguments')
end
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
if redis.call('del', KEYS[1]) == 1 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head then
    redis.call('publish', KEYS[4] .. ':' .. head, '0')
  end
  return 1
end
return 0
