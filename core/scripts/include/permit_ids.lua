-- Reads permit ids from ARGV[first] on: each exactly 16 bytes (Redisson's raw id; shown to users
-- as 32 hex digits), no id twice, from 1 to 1000 of them (each goes through one unpack). Returns
-- the list, or nil and the error reply's text.
local function permit_ids(first)
  local ids, seen = {}, {}
  for i = first, #ARGV do
    local id = ARGV[i]
    if #id ~= 16 then
      return nil, 'ERR rlock: a permit id must be 16 bytes, got ' .. #id
    end
    if seen[id] then
      return nil, 'ERR rlock: the same permit id is given twice'
    end
    seen[id] = true
    ids[#ids + 1] = id
  end
  if #ids == 0 or #ids > 1000 then
    return nil, 'ERR rlock: from 1 to 1000 permit ids per call, got ' .. #ids
  end
  return ids
end
