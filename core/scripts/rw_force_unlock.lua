-- Deletes a read-write lock held in the given mode, whoever holds it, and wakes every waiter.
-- KEYS[1] lock hash, KEYS[2] channel "redisson_rwlock:{N}". ARGV[1] 'read' or 'write'.
-- Returns 1 if a lock was deleted, else 0.
if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], '1')
  return 1
end
return 0
