-- lock_extend.lua — moves the end of a grant's lease; never re-acquires a lock that is gone.
--
-- KEYS[1]  lease hash <prefix>:{<escaped name>}:lock (fields o, n, f; see lock_acquire.lua)
-- ARGV[1]  owner token
-- ARGV[2]  new lease length in µs from now (PEXPIRE rounded up to whole ms, at least 1 ms)
-- ARGV[3]  the grant's fencing token: an owner's older, expired grant must not extend a newer one
--
-- Reply: 1 extended; 0 expired (nobody holds the lock): nothing changed;
--        -1 another grant holds it (another owner, or this owner's newer grant): nothing changed.
--
-- Mirrors: ratelock::algorithm::lease::extend (core/src/algorithm/lease.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local held = redis.call('HMGET', KEYS[1], 'o', 'f')
if held[1] == false then
  return 0
end
if held[1] ~= ARGV[1] or tonumber(held[2]) ~= tonumber(ARGV[3]) then
  return -1
end
redis.call('PEXPIRE', KEYS[1], string.format('%d', math.max(math.ceil(tonumber(ARGV[2]) / 1000), 1)))
return 1
