-- Deletes a fair lock whoever holds it and wakes the queue head.
-- KEYS[1] lock hash, KEYS[2] queue, KEYS[3] deadlines, KEYS[4] channel prefix.
-- ARGV[1] now (ms since the epoch). Returns 1 if a lock was deleted, else 0.
local now = tonumber(ARGV[1])
if not now then
  return redis.error_reply('ERR rlock: invalid force unlock arguments')
end
-- @include fair_prune.lua
if redis.call('del', KEYS[1]) == 1 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head then
    redis.call('publish', KEYS[4] .. ':' .. head, '0')
  end
  return 1
end
return 0
