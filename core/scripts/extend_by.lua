-- Adds time to the remaining lease of a held lock, read and written in one step.
-- KEYS[1] lock hash; for a reader also KEYS[2], its read-lease key prefix
-- "{N}:<owner>:rwlock_timeout" (hold k's lease key "<prefix>:k").
-- ARGV[1] ms to add, ARGV[2] the owner's field, ARGV[3] the longest lease allowed (ms).
-- Returns the owner's new remaining lease (ms, > 0) when extended; -1 when nobody holds the
-- lock, -2 when another owner holds it, -3 when this owner holds it but the lock (or one of its
-- read leases) has no expiry: there is no lease to add to, and nothing changes.
local add, cap = tonumber(ARGV[1]), tonumber(ARGV[3])
if not add or add <= 0 or add ~= math.floor(add) or not cap or cap < add or #KEYS > 2 then
  return redis.error_reply('ERR rlock: invalid extend-by arguments')
end
local holds = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if not holds then
  if redis.call('exists', KEYS[1]) == 1 then
    return -2
  end
  return -1
end
local hash_pttl = redis.call('pttl', KEYS[1])
if hash_pttl < 0 then
  return -3
end
if #KEYS == 1 then
  local lease = math.min(hash_pttl + add, cap)
  redis.call('pexpire', KEYS[1], string.format('%.0f', lease))
  return lease
end
-- A reader: its own leases, not the hash's (the longest reader's). Its holds share one lease,
-- as a renewal leaves them; a lease key already gone counts as 0 left and is set again.
local own = 0
for k = 1, holds do
  local left = redis.call('pttl', KEYS[2] .. ':' .. k)
  if left == -1 then
    return -3
  end
  own = math.max(own, left)
end
local lease = math.min(own + add, cap)
for k = 1, holds do
  redis.call('set', KEYS[2] .. ':' .. k, 1, 'px', string.format('%.0f', lease))
end
-- The hash lives as long as its longest reader lease.
redis.call('pexpire', KEYS[1], string.format('%.0f', math.max(hash_pttl, lease)))
return lease
