-- semaphore_extend.lua — moves the end of one permit's lease; never re-takes an expired permit.
--
-- KEYS[1]  permits sorted set <prefix>:{<escaped name>}:permits (see semaphore_acquire.lua)
-- ARGV[1]  permit id
-- ARGV[2]  new lease length in µs from now
-- ARGV[3]  now in µs, or "" to read the server clock (TIME)
--
-- Reply: 1 extended; 0 the permit is gone (expired or released): nothing changed.
--
-- Mirrors: ratelock::algorithm::permits::extend (core/src/algorithm/permits.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local key, id, ttl_us = KEYS[1], ARGV[1], tonumber(ARGV[2])
local now = now_us(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', int(now))
if redis.call('ZSCORE', key, id) == false then
  return 0
end
redis.call('ZADD', key, 'XX', int(now + ttl_us), id)
local last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
redis.call('PEXPIRE', key, int(math.ceil((last - now) / 1000)))
return 1
