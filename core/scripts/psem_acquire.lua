-- Permit-expirable semaphore (Redisson RPermitExpirableSemaphore): takes permits, each under
-- an id of its own with a deadline, without waiting. Expired permits are given back first (at
-- most as many as asked for, as Redisson does); then, if enough are available, the count goes
-- down by DECRBY and each id is added to the deadline set with the deadline. While the count
-- key has an expiry, the deadline set gets the same one, so both go together.
-- KEYS[1] count "N", KEYS[2] deadlines "{N}:timeout", KEYS[3] channel "redisson_sc:{N}",
-- KEYS[4] (optional) the request's tombstone "redisson_unlock_latch:{N}:<first id in hex>":
-- while it exists the request was undone (psem_undo_acquire.lua), and it is refused.
-- ARGV[1] now (the client's clock, ms since the epoch), ARGV[2] deadline (now + lease, or
-- 922337203685477 for a permit without lease, Redisson's "never"), ARGV[3...] the new ids,
-- one per permit (16 random bytes each).
-- Returns {1, 0, count left} when taken; {0, earliest deadline or 0, count} when too few are
-- available: the earliest deadline of a held permit with a lease is when a waiter should try
-- again (0 when every holder has none); the count is -1 when the semaphore does not exist.
-- A retry of an applied acquire (every id already held and unexpired: its reply was lost)
-- answers {1, 0, count} and changes nothing.
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
local deadline = whole_arg(ARGV[2], now + 1, never)
if not deadline then
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
-- A late copy of an undone request: its ids were given back, and nobody would release them.
if KEYS[4] and redis.call('exists', KEYS[4]) == 1 then
  return {0, 0, count or -1}
end
-- Fresh ids are in no set; all of them held and alive means this request was applied before.
local alive, listed = 0, 0
for _, id in ipairs(ids) do
  local score = redis.call('zscore', KEYS[2], id)
  if score then
    listed = listed + 1
    if tonumber(score) > now then
      alive = alive + 1
    end
  end
end
if alive == #ids then
  return {1, 0, count or -1}
end
if listed > 0 then
  return redis.error_reply('ERR rlock: permit ids already in use')
end
if not count then
  return {0, 0, -1}
end
local permits = #ids
if reclaim_expired(ARGV[1], permits) > 0 then
  count = tonumber(redis.call('get', KEYS[1]))
end
if count >= permits then
  local left = redis.call('decrby', KEYS[1], permits)
  for _, id in ipairs(ids) do
    redis.call('zadd', KEYS[2], ARGV[2], id)
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  return {1, 0, left}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
local earliest = 0
if first[2] and tonumber(first[2]) < never then
  earliest = tonumber(first[2])
end
return {0, earliest, count}
