-- semaphore_release.lua — gives back one permit, only for the id that holds it; idempotent.
--
-- KEYS[1]  permits sorted set <prefix>:{<escaped name>}:permits (see semaphore_acquire.lua)
-- ARGV[1]  permit id
-- ARGV[2]  channel told of the release: <prefix>:{<escaped name>}:released
-- ARGV[3]  now in µs, or "" to read the server clock (TIME)
--
-- Reply: 1 released (the channel gets "released"); 0 the permit was not held (expired or released
-- before): nothing changed.
--
-- Mirrors: ratelock::algorithm::permits::release (core/src/algorithm/permits.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local now = now_us(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('PUBLISH', ARGV[2], 'released')
return 1
