-- semaphore_acquire.lua — takes one of N permits; permits are leases that end on their own.
--
-- KEYS[1]  permits: sorted set <prefix>:{<escaped name>}:permits, member = permit id, score = lease end µs
-- ARGV[1]  permit id (the handle's owner token and a counter: unique per grant)
-- ARGV[2]  N, the number of permits
-- ARGV[3]  lease length in µs
-- ARGV[4]  now in µs, or "" to read the server clock (TIME)
--
-- Reply: {1, permits in use} when granted (an id that already holds a permit renews it);
--        {0, µs until the earliest lease ends} when all N are taken.
-- Expired permits (score <= now) are reclaimed first, by server time. The set's TTL is kept at its
-- last lease end, so an abandoned semaphore disappears.
--
-- Mirrors: ratelock::algorithm::permits::acquire (core/src/algorithm/permits.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local key, id = KEYS[1], ARGV[1]
local limit, ttl_us = tonumber(ARGV[2]), tonumber(ARGV[3])
if limit == nil or limit < 1 or ttl_us == nil or ttl_us < 1 or id == nil or id == '' then
  return redis.error_reply('ERR ratelock: semaphore_acquire needs an id, N >= 1 and a lease >= 1 µs')
end
local now = now_us(ARGV[4])

redis.call('ZREMRANGEBYSCORE', key, '-inf', int(now))
local held = redis.call('ZSCORE', key, id)
local in_use = redis.call('ZCARD', key)
if held == false and in_use >= limit then
  local earliest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
  return { 0, earliest - now }
end
redis.call('ZADD', key, int(now + ttl_us), id)
local last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
-- Counted before the PEXPIRE, which on Redis 7.0 deletes a set of 1 ms at once when the server's clock
-- crosses a ms between its two readings.
local in_use_now = redis.call('ZCARD', key)
redis.call('PEXPIRE', key, int(math.ceil((last - now) / 1000)))
return { 1, in_use_now }
