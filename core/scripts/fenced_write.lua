-- A resource guarded by fencing tokens, kept in Redis itself: the write is applied only if the
-- writer's token is at least the highest one seen for this resource.
-- KEYS[1] resource key (a string), KEYS[2] highest token seen "rlock_fence:{K}".
-- ARGV[1] token, ARGV[2] value. Returns 1 when written, 0 when refused as stale.
local token = tonumber(ARGV[1])
if not token or token < 0 or token ~= math.floor(token) then
  return redis.error_reply('ERR rlock: token must be a non-negative whole number')
end
local highest = tonumber(redis.call('get', KEYS[2]) or '0')
if token < highest then
  return 0
end
redis.call('set', KEYS[2], ARGV[1])
redis.call('set', KEYS[1], ARGV[2])
return 1
