-- The next fencing token from the counter `key`. A counter that does not exist (new, or lost
-- with the server's data: restart without persistence, eviction) starts a new epoch at the
-- server's clock in milliseconds times 1000, above every token handed out before (unless a
-- lock was acquired 1000 times a millisecond), so a holder from before the loss can never
-- outrank one from after it at a fenced resource. Built as a string: Lua numbers are doubles.
local function next_token(key)
  if redis.call('exists', key) == 0 then
    local now = redis.call('time')
    redis.call('set', key, now[1] .. string.format('%03d', math.floor(now[2] / 1000)) .. '000')
  end
  return redis.call('incr', key)
end
