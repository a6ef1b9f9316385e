-- Permit-expirable semaphore: gives held permits back, all or none (as Redisson's release of
-- a list of ids). Every id must be held and unexpired, else nothing changes. Then expired
-- permits of others are given back too (Redisson does so here), the ids leave the deadline
-- set, the count goes up by INCRBY, and the new count is published when positive.
-- KEYS[1] count "N", KEYS[2] deadlines "{N}:timeout", KEYS[3] channel "redisson_sc:{N}".
-- ARGV[1] now (ms since the epoch), ARGV[2...] the ids (16 bytes each).
-- Returns the number of permits given back; -1 when an id is not held (never was, released
-- already, or expired and given back to the semaphore), -2 when an id's lease ran out (its
-- permit will be given back by the next script that reclaims), -3 when the semaphore does not
-- exist. With -1, -2 and -3 nothing changes. (Redisson's single-id release gives an expired
-- but not yet reclaimed permit back while answering false; rlock leaves it to the reclaim.)
-- @include whole_arg.lua
-- @include read_count.lua
-- @include psem_check_keys.lua
-- @include permit_ids.lua
-- @include psem_reclaim.lua
local now = whole_arg(ARGV[1], 1, 922337203685476)
if not now then
  return redis.error_reply('ERR rlock: now must be a positive whole number of ms since the epoch')
end
local ids, bad_ids = permit_ids(2)
if not ids then
  return redis.error_reply(bad_ids)
end
local count, problem = check_psem_keys()
if count == nil then
  return problem
end
local expired = false
for _, id in ipairs(ids) do
  local score = redis.call('zscore', KEYS[2], id)
  if not score then
    return -1
  end
  if tonumber(score) <= now then
    expired = true
  end
end
if expired then
  return -2
end
if not count then
  return -3
end
reclaim_expired(ARGV[1], nil)
local released = redis.call('zrem', KEYS[2], unpack(ids))
local available = redis.call('incrby', KEYS[1], released)
if available > 0 then
  redis.call('publish', KEYS[3], tostring(available))
end
return released
