-- Checks a permit-expirable semaphore's two keys before any write: the count "N" must be a
-- whole number or missing, the deadlines "{N}:timeout" a sorted set or missing. Returns the
-- count (false when missing), or nil and an error reply.
-- Needs KEYS[1] count, KEYS[2] deadlines, and read_count.lua included before.
local function check_psem_keys()
  local kind = redis.call('type', KEYS[2])['ok']
  if kind ~= 'none' and kind ~= 'zset' then
    return nil, redis.error_reply('ERR rlock: the permit deadlines key holds a ' .. kind ..
                                  ', not a sorted set')
  end
  return read_count(KEYS[1], 'semaphore')
end
