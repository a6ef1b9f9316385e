-- Gives expired permits of a permit-expirable semaphore back (Redisson's rule: a permit whose
-- deadline is at or before `now` is expired): removes them from the deadline set and adds them
-- to the available count, then tells the waiters the new count when it is positive (Redisson's
-- waiters wake up to that many). `limit` caps how many go (an acquire reclaims at most as many
-- as it asks for, like Redisson); nil means all of them. Returns how many were reclaimed.
-- Needs KEYS[1] count "N", KEYS[2] deadlines "{N}:timeout", KEYS[3] channel "redisson_sc:{N}".
local function reclaim_expired(now, limit)
  local reclaimed
  if limit then
    local expired = redis.call('zrangebyscore', KEYS[2], 0, now, 'limit', 0, limit)
    if #expired == 0 then
      return 0
    end
    reclaimed = redis.call('zrem', KEYS[2], unpack(expired))
  else
    -- No unpack: a set of any size is cleared in one command.
    reclaimed = redis.call('zremrangebyscore', KEYS[2], 0, now)
  end
  if reclaimed > 0 then
    local available = redis.call('incrby', KEYS[1], reclaimed)
    if available > 0 then
      redis.call('publish', KEYS[3], tostring(available))
    end
  end
  return reclaimed
end
