-- Reads a count kept as a decimal string (a semaphore's available permits, a latch's count).
-- Returns false when the key does not exist, the count as a number when it holds one (negative
-- counts included: Redisson's addPermits writes them), or nil and an error reply naming the
-- problem when the key holds something else, so a script can refuse before any write.
local function read_count(key, what)
  local kind = redis.call('type', key)['ok']
  if kind == 'none' then
    return false
  end
  if kind ~= 'string' then
    return nil, redis.error_reply('ERR rlock: the ' .. what .. ' key holds a ' .. kind ..
                                  ', not a count')
  end
  local text = redis.call('get', key)
  if #text > 20 or (text ~= '0' and not string.match(text, '^%-?[1-9]%d*$')) then
    return nil, redis.error_reply('ERR rlock: the ' .. what .. ' key holds a string that is ' ..
                                  'not a whole number')
  end
  return tonumber(text)
end
