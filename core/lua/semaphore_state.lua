-- semaphore_state.lua — counts the permits in use without changing anything.
--
-- KEYS[1]  permits sorted set <prefix>:{<escaped name>}:permits (see semaphore_acquire.lua)
-- ARGV[1]  now in µs, or "" to read the server clock (TIME)
--
-- Reply: {permits in use (leases not yet ended), µs until the earliest lease ends (0 when none)}
--
-- Mirrors: the memory store's permit count (core/src/store/memory_locks.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local now = now_us(ARGV[1])
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%d', now), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local count = redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%d', now), '+inf')
if count == 0 then
  return { 0, 0 }
end
return { count, tonumber(live[2]) - now }
