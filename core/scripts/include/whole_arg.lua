-- Reads a whole-number argument written as Redis writes integers (an optional '-', no leading
-- zero, at most 15 digits, so a Lua double holds it exactly and the text can be passed on to
-- INCRBY or SET as it is), from `low` to `high`. Returns nil for anything else ("1.5", "0x10",
-- " 5", "1e3", "007", "-0" and "" included), so the caller can refuse it before any write.
local function whole_arg(text, low, high)
  if type(text) ~= 'string' or #text > 16 or
     (text ~= '0' and not string.match(text, '^%-?[1-9]%d*$')) then
    return nil
  end
  local value = tonumber(text)
  if value < low or value > high then
    return nil
  end
  return value
end
