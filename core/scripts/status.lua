-- Reads a lock's state in one round trip.
-- KEYS[1] lock hash. ARGV[1] the owner asking.
-- Returns {pttl, the asker's hold count, number of owner fields, first field, its count}.
local pttl = redis.call('pttl', KEYS[1])
if pttl == -2 then
  return {-2, 0, 0, false, 0}
end
local mine = tonumber(redis.call('hget', KEYS[1], ARGV[1])) or 0
local fields = redis.call('hlen', KEYS[1])
local first, first_count = false, 0
if fields > 0 then
  local all = redis.call('hgetall', KEYS[1])
  first, first_count = all[1], tonumber(all[2]) or 0
end
return {pttl, mine, fields, first, first_count}
