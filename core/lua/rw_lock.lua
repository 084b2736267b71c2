-- rw_lock.lua — many readers or one writer, each hold its own lease. With writer preference, a refused
-- writer leaves a waiting mark (a short lease it renews by asking again) and new readers are refused
-- while any mark lives, so readers cannot starve writers. Every grant mints a fencing token.
--
-- KEYS[1]  readers sorted set <prefix>:{<escaped name>}:rw-readers, member = "<token>:<grant id>",
--          score = lease end µs
-- KEYS[2]  writer hash <prefix>:{<escaped name>}:rw-writer, fields i (grant id), f (token), e (end µs)
-- KEYS[3]  waiting writers sorted set <prefix>:{<escaped name>}:rw-waiting, member = grant id,
--          score = µs at which the mark lapses
-- KEYS[4]  fencing counter <prefix>:{<escaped name>}:fence (the one key without a TTL)
-- ARGV[1]  operation: acquire, release, extend, withdraw, state
-- ARGV[2]  now in µs, or "" to read the server clock (TIME)
-- ARGV[3]  grant id (one per acquire)
-- ARGV[4]  mode: r (read) or w (write)
-- ARGV[5]  the grant's fencing token (release, extend)
-- ARGV[6]  lease length in µs (acquire, extend)
-- ARGV[7]  mark length in µs (acquire)
-- ARGV[8]  "1" to prefer writers, else "0" (acquire)
-- ARGV[9]  "1" when a refused writer should leave a waiting mark (a waiting acquire), else "0"
-- ARGV[10] channel told when the lock may have become available: <prefix>:{<escaped name>}:released
--
-- Reply: acquire: {1, fencing token} granted; {0, µs worth waiting}
--        release/extend/withdraw: {1, 0} done; {0, 0} nothing changed
--        state: {readers, writer's token (0: none), µs left on the writer's lease, waiting writers,
--                last token minted}
--
-- Mirrors: ratelock::algorithm::rwlock::apply (core/src/algorithm/rwlock.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local readers, writer_key, waiting, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, id, mode = ARGV[1], ARGV[3], ARGV[4]
local now = now_us(ARGV[2])
local function expire_at(key, ends) redis.call('PEXPIRE', key, int(math.ceil((ends - now) / 1000))) end
local function latest(key) return tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
local function earliest(key) return tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2]) end

-- Ended leases and lapsed marks are gone.
redis.call('ZREMRANGEBYSCORE', readers, '-inf', int(now))
redis.call('ZREMRANGEBYSCORE', waiting, '-inf', int(now))
local held = redis.call('HMGET', writer_key, 'i', 'f', 'e')
local writer, writer_fence, writer_ends = held[1], tonumber(held[2]), tonumber(held[3])
if writer and writer_ends <= now then
  redis.call('DEL', writer_key)
  writer = false
end

if op == 'acquire' then
  local ttl_us, waiter_ttl_us = tonumber(ARGV[6]), tonumber(ARGV[7])
  if ttl_us == nil or ttl_us < 1 or id == nil or id == '' or (mode ~= 'r' and mode ~= 'w') then
    return redis.error_reply('ERR ratelock: rw_lock acquire needs a grant id, mode r or w and a lease >= 1 µs')
  end
  local prefer_writers = ARGV[8] == '1'
  if mode == 'r' then
    if writer then
      return { 0, writer_ends - now }
    end
    local lapses = earliest(waiting)
    if prefer_writers and lapses then
      return { 0, lapses - now }
    end
    local fence, text = mint_fence(counter, now)
    redis.call('ZADD', readers, int(now + ttl_us), text .. ':' .. id)
    expire_at(readers, latest(readers))
    return { 1, fence }
  end
  local busy_until = writer and writer_ends or earliest(readers)
  if not busy_until then
    redis.call('ZREM', waiting, id)
    local fence, text = mint_fence(counter, now)
    redis.call('HSET', writer_key, 'i', id, 'f', text, 'e', int(now + ttl_us))
    expire_at(writer_key, now + ttl_us)
    return { 1, fence }
  end
  local retry = busy_until - now
  if prefer_writers and ARGV[9] == '1' then
    redis.call('ZADD', waiting, int(now + waiter_ttl_us), id)
    expire_at(waiting, latest(waiting))
    retry = math.min(retry, math.floor(waiter_ttl_us / 2))
  end
  return { 0, retry }
end

local fence = tonumber(ARGV[5])
local function is_writer() return writer == id and writer_fence == fence end
local reader = int(fence or 0) .. ':' .. tostring(id)

if op == 'release' then
  local released
  if mode == 'r' then
    released = redis.call('ZREM', readers, reader) == 1
  else
    released = is_writer()
    if released then
      redis.call('DEL', writer_key)
      writer = false
    end
  end
  -- Readers leaving matter to writers only once the last one is gone.
  if released and not writer and redis.call('ZCARD', readers) == 0 then
    redis.call('PUBLISH', ARGV[10], 'released')
  end
  return { released and 1 or 0, 0 }
end

if op == 'extend' then
  local ends = now + tonumber(ARGV[6])
  if mode == 'r' then
    if redis.call('ZSCORE', readers, reader) == false then
      return { 0, 0 }
    end
    redis.call('ZADD', readers, 'XX', int(ends), reader)
    expire_at(readers, latest(readers))
    return { 1, 0 }
  end
  if not is_writer() then
    return { 0, 0 }
  end
  redis.call('HSET', writer_key, 'e', int(ends))
  expire_at(writer_key, ends)
  return { 1, 0 }
end

if op == 'withdraw' then
  if redis.call('ZREM', waiting, id) == 0 then
    return { 0, 0 }
  end
  -- Readers held back by the last mark may go now.
  if not writer and redis.call('ZCARD', waiting) == 0 then
    redis.call('PUBLISH', ARGV[10], 'released')
  end
  return { 1, 0 }
end

if op == 'state' then
  local last = stored(redis.call('GET', counter), counter) or 0
  local ends, token = 0, 0
  if writer then
    ends, token = writer_ends - now, writer_fence
  end
  return { redis.call('ZCARD', readers), token, ends, redis.call('ZCARD', waiting), last }
end

return redis.error_reply('ERR ratelock: rw_lock has no operation ' .. tostring(op))
