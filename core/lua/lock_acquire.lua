-- lock_acquire.lua — takes a lock if it is free (or re-enters it for its owner) and mints a fencing token.
--
-- KEYS[1]  lease hash <prefix>:{<escaped name>}:lock, fields o (owner token), n (holds), f (fencing token)
-- KEYS[2]  fencing counter <prefix>:{<escaped name>}:fence (a string; the one key without a TTL)
-- ARGV[1]  owner token (128 random bits, hex)
-- ARGV[2]  lease length in µs (the key's PEXPIRE is rounded up to whole ms)
-- ARGV[3]  "1" to allow re-entry by the same owner, else "0"
-- ARGV[4]  now in µs for the fencing token, or "" to read the server clock (TIME)
--
-- Reply: {1, fencing token, holds} when granted (a re-entry keeps the token and counts the hold);
--        {0, µs until the current lease ends, 0} when someone else holds it (or its owner, without re-entry).
-- A new token is max(last token + 1, now in µs): strictly rising per lock, and still rising after a
-- restart without persistence, since the server clock moved on (values stay below 2^53).
--
-- Mirrors: ratelock::algorithm::lease::acquire (core/src/algorithm/lease.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local lease, counter = KEYS[1], KEYS[2]
local owner, ttl_us, reentrant = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
if ttl_us == nil or ttl_us < 1 or owner == nil or owner == '' then
  return redis.error_reply('ERR ratelock: lock_acquire needs an owner and a lease of at least 1 µs')
end
local now = now_us(ARGV[4])
local px = string.format('%d', math.ceil(ttl_us / 1000))

-- The owner alone first: a free lock, the common case, needs no more (an HMGET's table reply costs the
-- server about 5,000 instructions more than this HGET's string).
local holder = redis.call('HGET', lease, 'o')
if holder == false then
  local fence, text = mint_fence(counter, now)
  -- '1' as text: a number argument is formatted by the server's Lua on every call.
  redis.call('HSET', lease, 'o', owner, 'n', '1', 'f', text)
  redis.call('PEXPIRE', lease, px)
  return { 1, fence, 1 }
end
if holder == owner and reentrant then
  local holds = redis.call('HINCRBY', lease, 'n', 1)
  -- Read before the PEXPIRE, which on Redis 7.0 deletes a 1 ms lease at once when the server's clock
  -- crosses a ms between its two readings.
  local fence = tonumber(redis.call('HGET', lease, 'f'))
  redis.call('PEXPIRE', lease, px)
  return { 1, fence, holds }
end
return { 0, math.max(redis.call('PTTL', lease), 0) * 1000, 0 }
