-- Permit-expirable semaphore: settles an acquire (psem_acquire) whose replies were lost. Its
-- ids still held are removed and their permits given back (INCRBY, the new count published
-- when positive, as psem_release does; no count when the semaphore is gone), and a tombstone
-- is written so the same request, should it still arrive (held in a paused server's buffer),
-- is refused: nobody knows its ids to give them back. The ids name the request, so nothing
-- else is kept for an acquire that got its answer.
-- KEYS[1] count "N", KEYS[2] deadlines "{N}:timeout", KEYS[3] channel "redisson_sc:{N}",
-- KEYS[4] the tombstone "redisson_unlock_latch:{N}:<first id in hex>".
-- ARGV[1] tombstone expiry ms, ARGV[2...] the request's ids (16 bytes each).
-- Returns how many permits were given back (0 when the request never ran, or was undone).
-- @include whole_arg.lua
-- @include read_count.lua
-- @include psem_check_keys.lua
-- @include permit_ids.lua
if not whole_arg(ARGV[1], 1, 999999999999999) then
  return redis.error_reply('ERR rlock: tombstone expiry must be a positive whole number of ms')
end
local ids, bad_ids = permit_ids(2)
if not ids then
  return redis.error_reply(bad_ids)
end
local count, problem = check_psem_keys()
if count == nil then
  return problem
end
-- The tombstone first: if this write is refused (out of memory) nothing else changes.
redis.call('set', KEYS[4], '0', 'px', ARGV[1])
-- An id past its deadline and not yet reclaimed goes back too, as a reclaim would give it.
local removed = redis.call('zrem', KEYS[2], unpack(ids))
if removed > 0 and count then
  local available = redis.call('incrby', KEYS[1], removed)
  if available > 0 then
    redis.call('publish', KEYS[3], tostring(available))
  end
end
return removed
