-- Remembers a release's result under its request's latch key, so a retry of the same request
-- (its reply was lost) gets the same answer instead of releasing twice. A server out of
-- memory refuses the SET; the release itself stands, so that is not an error.
local function store_latch(key, result, ttl_ms)
  redis.pcall('set', key, result, 'px', ttl_ms)
end
