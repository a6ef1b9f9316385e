-- Undoes a read acquire whose reply was lost, if it was applied: takes back exactly the hold it
-- granted (the owner's newest), as its release would.
-- KEYS[1] lock hash, KEYS[2] channel "redisson_rwlock:{N}", KEYS[3] the owner's read-lease key
-- prefix, KEYS[4] the lease prefix of the lock ("{N}").
-- ARGV[1] owner, ARGV[2] the read holds that acquire would have produced.
-- Returns 1 when the acquire had been applied and is now undone, 0 when it never happened.
-- @include rw_drop_read_hold.lua
local expected = tonumber(ARGV[2])
if not expected or tonumber(redis.call('hget', KEYS[1], ARGV[1])) ~= expected then
  return 0
end
drop_read_hold(ARGV[1], redis.call('hget', KEYS[1], 'mode'))
return 1
