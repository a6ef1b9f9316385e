-- Reads a lock's state in one round trip.
-- KEYS[1] lock hash. ARGV[1] the owner field asking.
-- Returns {pttl, the asker's hold count, number of owner fields, first owner field, its count,
-- mode ('read', 'write' or false: not a read-write lock or not locked)}.
local pttl = redis.call('pttl', KEYS[1])
if pttl == -2 then
  return {-2, 0, 0, false, 0, false}
end
local mine = tonumber(redis.call('hget', KEYS[1], ARGV[1])) or 0
local mode = redis.call('hget', KEYS[1], 'mode')
local all = redis.call('hgetall', KEYS[1])
local owners, first, first_count = 0, false, 0
for i = 1, #all, 2 do
  if all[i] ~= 'mode' then
    owners = owners + 1
    if not first then
      first, first_count = all[i], tonumber(all[i + 1]) or 0
    end
  end
end
return {pttl, mine, owners, first, first_count, mode}
