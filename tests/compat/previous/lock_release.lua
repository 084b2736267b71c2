local ratelock_call_tag = table.remove(ARGV)
local ratelock_reply = (function()
-- What every ratelock script shares: `tagged_script` (core/src/store/redis/script.rs) puts this in
-- front of each script's body, so a script can use these two helpers without defining them.

-- The time in µs since the Unix epoch: `given` when the caller passed one (an ARGV), else the server
-- clock (TIME).
local function now_us(given)
  local now = tonumber(given)
  if now ~= nil then
    return now
  end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- An integer as a command argument (no exponent, no decimals).
local function int(x)
  return string.format('%d', x)
end

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
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); a reply that is not an
-- error goes back as {tag, reply}, so a reply can never be taken for another call's.

local held = redis.call('HMGET', KEYS[1], 'o', 'n', 'f')
if held[1] == false then
  return { 0, 0 }
end
if held[1] ~= ARGV[1] or tonumber(held[3]) ~= tonumber(ARGV[3]) then
  return { -1, 0 }
end
local holds = tonumber(held[2]) or 1
if holds > 1 then
  return { 2, redis.call('HINCRBY', KEYS[1], 'n', -1) }
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'released')
return { 1, 0 }

end)()
if type(ratelock_reply) == 'table' and ratelock_reply.err then return ratelock_reply end
return { ratelock_call_tag, ratelock_reply }
