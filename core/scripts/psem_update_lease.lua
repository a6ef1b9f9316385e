-- Permit-expirable semaphore: moves the deadline of held permits (Redisson's updateLeaseTime,
-- for many ids at once: rlock's watchdog renews all of a client's permits of one semaphore in
-- one call). Expired permits are given back first, so an expired permit cannot be revived.
-- KEYS[1] count "N", KEYS[2] deadlines "{N}:timeout", KEYS[3] channel "redisson_sc:{N}".
-- ARGV[1] now (ms since the epoch), ARGV[2] the new deadline (after now; 922337203685477 for
-- no lease), ARGV[3...] the ids (16 bytes each).
-- Returns one integer per id, in order: 1 renewed, 0 not held (released or expired).
-- @include whole_arg.lua
-- @include read_count.lua
-- @include psem_check_keys.lua
-- @include permit_ids.lua
-- @include psem_reclaim.lua
local never = 922337203685477
local now = whole_arg(ARGV[1], 1, never - 1)
if not now then
  return redis.error_reply('ERR rlock: now must be a positive whole number of ms since the epoch')
end
if not whole_arg(ARGV[2], now + 1, never) then
  return redis.error_reply('ERR rlock: the deadline must be after now, at most ' .. never)
end
local ids, bad_ids = permit_ids(3)
if not ids then
  return redis.error_reply(bad_ids)
end
local count, problem = check_psem_keys()
if count == nil then
  return problem
end
if count then
  reclaim_expired(ARGV[1], nil)
end
local renewed = {}
for i, id in ipairs(ids) do
  if redis.call('zscore', KEYS[2], id) then
    redis.call('zadd', KEYS[2], ARGV[2], id)
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
