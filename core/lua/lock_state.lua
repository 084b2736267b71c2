-- lock_state.lua — reads a lock without changing it, in one consistent step.
--
-- KEYS[1]  lease hash <prefix>:{<escaped name>}:lock (fields o, n, f; see lock_acquire.lua)
-- KEYS[2]  fencing counter <prefix>:{<escaped name>}:fence
--
-- Reply: {held (1/0), µs until the lease ends (0 when free), holder's fencing token (0 when free),
--         last fencing token minted (0 if none)}
--
-- Mirrors: the memory store's lock inspection (core/src/store/memory_locks.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local fence = tonumber(redis.call('HGET', KEYS[1], 'f'))
local last = stored(redis.call('GET', KEYS[2]), KEYS[2]) or 0
if fence == nil then
  return { 0, 0, 0, last }
end
return { 1, math.max(redis.call('PTTL', KEYS[1]), 0) * 1000, fence, last }
