-- lock_release.lua — gives back one hold of a lock, only for the grant that holds it; idempotent.
--
-- KEYS[1]  lease hash <prefix>:{<escaped name>}:lock (fields o, n, f; see lock_acquire.lua)
-- ARGV[1]  owner token
-- ARGV[2]  channel told of the release: <prefix>:{<escaped name>}:released
-- ARGV[3]  the grant's fencing token: an owner's older, expired grant must not release a newer one
--
-- Reply: {1, 0} released (the lease is deleted and the channel gets "released");
--        {2, holds left} one re-entrant hold given back, the lock is still held;
--        {0, 0} nobody holds the lock (released before, or expired): nothing changed;
--        {-1, 0} another grant holds it (another owner, or this owner's newer grant): nothing changed.
--
-- Mirrors: ratelock::algorithm::lease::release (core/src/algorithm/lease.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local held = redis.call('HMGET', KEYS[1], 'o', 'n', 'f')
if held[1] == false then
  return { 0, 0 }
end
-- The tokens' texts first: both are written as decimals, and comparing them reads no number.
if held[1] ~= ARGV[1] or (held[3] ~= ARGV[3] and tonumber(held[3]) ~= tonumber(ARGV[3])) then
  return { -1, 0 }
end
local holds = tonumber(held[2]) or 1
if holds > 1 then
  return { 2, redis.call('HINCRBY', KEYS[1], 'n', -1) }
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'released')
return { 1, 0 }
