-- Watchdog renewal (or extend) of read holds, many in one call.
-- KEYS[2i-1] lock hash, KEYS[2i] the owner's read-lease key prefix "{N}:<owner>:rwlock_timeout".
-- ARGV[1] lease ms, ARGV[i + 1] the owner.
-- Returns one integer per pair: 1 renewed, 0 the owner no longer holds a read lock.
local lease = tonumber(ARGV[1])
if not lease or lease <= 0 or #KEYS ~= 2 * (#ARGV - 1) then
  return redis.error_reply('ERR rlock: invalid read renew arguments')
end
local renewed = {}
for i = 1, #ARGV - 1 do
  local hash, prefix = KEYS[2 * i - 1], KEYS[2 * i]
  local holds = tonumber(redis.pcall('hget', hash, ARGV[i + 1]))
  if holds then
    for k = holds, 1, -1 do
      redis.call('pexpire', prefix .. ':' .. k, ARGV[1])
    end
    redis.call('pexpire', hash, math.max(redis.call('pttl', hash), lease))
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
