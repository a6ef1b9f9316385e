-- Watchdog renewal of many holds in one call.
-- KEYS[i] lock hash, ARGV[1] lease ms, ARGV[i + 1] the owner of KEYS[i].
-- Returns one integer per key: 1 renewed, 0 the owner no longer holds it.
local lease = tonumber(ARGV[1])
if not lease or lease <= 0 or #ARGV ~= #KEYS + 1 then
  return redis.error_reply('ERR rlock: invalid renew arguments')
end
local renewed = {}
for i, key in ipairs(KEYS) do
  -- pcall: a key replaced by another type must not fail the other renewals of the batch
  local held = redis.pcall('hexists', key, ARGV[i + 1])
  if held == 1 then
    redis.call('pexpire', key, ARGV[1])
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
