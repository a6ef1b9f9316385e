-- Permit-expirable semaphore: the time left on a held permit's lease (Redisson's getLeaseTime).
-- Expired permits are given back first when the semaphore exists (Redisson does so here too).
-- KEYS[1] count "N", KEYS[2] deadlines "{N}:timeout", KEYS[3] channel "redisson_sc:{N}".
-- ARGV[1] now (ms since the epoch), ARGV[2] the id (16 bytes).
-- Returns the ms left (1 or more); -1 for a permit without lease (Redisson's answer); -2 when
-- the permit is not held (never taken, released, or its lease ran out).
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
local ids, bad_ids = permit_ids(2)
if not ids then
  return redis.error_reply(bad_ids)
end
if #ids ~= 1 then
  return redis.error_reply('ERR rlock: one permit id per call, got ' .. #ids)
end
local count, problem = check_psem_keys()
if count == nil then
  return problem
end
if count then
  reclaim_expired(ARGV[1], nil)
end
local score = redis.call('zscore', KEYS[2], ids[1])
if not score then
  return -2
end
local deadline = tonumber(score)
if deadline >= never then
  return -1
end
if deadline <= now then
  return -2
end
return deadline - now
