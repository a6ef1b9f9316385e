-- Count-down latch: deletes it (Redisson's delete). A deleted latch is open (count 0), yet the
-- message is "1" (closed again), as Redisson sends: Redisson's waiters are not woken by it, and
-- rlock's see the latch open at their channel's next periodic check.
-- KEYS[1] count "N", KEYS[2] channel "redisson_countdownlatch__channel__{N}".
-- Returns 1 when it existed, else 0.
if redis.call('del', KEYS[1]) == 1 then
  redis.call('publish', KEYS[2], '1')
  return 1
end
return 0
