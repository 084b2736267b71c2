-- fair_lock.lua — a lock handed out first come, first served: one lease plus a queue of waiters whose
-- places are short leases of their own (a waiter renews its place by asking again; a dead waiter's
-- place lapses). A free lock goes only to the head of the queue; a release wakes only the new head.
--
-- KEYS[1]  holder hash <prefix>:{<escaped name>}:fair, fields i (grant id), f (fencing token),
--          e (lease end µs); PEXPIRE at the lease end
-- KEYS[2]  queue list <prefix>:{<escaped name>}:fair-queue, grant ids in arrival order
-- KEYS[3]  places sorted set <prefix>:{<escaped name>}:fair-places, member = grant id,
--          score = µs at which the place lapses
-- KEYS[4]  fencing counter <prefix>:{<escaped name>}:fence (the one key without a TTL)
-- ARGV[1]  operation: acquire (queue when refused), try (never queue), release, extend, withdraw, state
-- ARGV[2]  now in µs, or "" to read the server clock (TIME)
-- ARGV[3]  grant id (one per acquire)
-- ARGV[4]  the grant's fencing token (release, extend)
-- ARGV[5]  lease length in µs (acquire, try, extend)
-- ARGV[6]  place length in µs (acquire)
-- ARGV[7]  wake channel prefix <prefix>:{<escaped name>}:wake: (the head's id is appended)
--
-- Reply: acquire/try: {1, fencing token, 0} granted; {0, µs worth waiting, place from 1 (0: not queued)}
--        release/extend/withdraw: {1, 0, 0} done; {0, 0, 0} nothing changed (not held, not queued)
--        state: {µs left on the lease (0 when free), holder's token (0), last token minted, waiters}
--
-- Mirrors: ratelock::algorithm::fair::apply (core/src/algorithm/fair.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local holder_key, queue, places, counter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, id = ARGV[1], ARGV[3]
local now = now_us(ARGV[2])
local function expire_at(key, ends) redis.call('PEXPIRE', key, int(math.ceil((ends - now) / 1000))) end

-- Places that lapsed leave the queue; a lease that ended is gone.
local lapsed = redis.call('ZRANGEBYSCORE', places, '-inf', int(now))
for _, gone in ipairs(lapsed) do
  redis.call('LREM', queue, 0, gone)
end
if #lapsed > 0 then
  redis.call('ZREMRANGEBYSCORE', places, '-inf', int(now))
end
local held = redis.call('HMGET', holder_key, 'i', 'f', 'e')
local holder, holder_fence, holder_ends = held[1], tonumber(held[2]), tonumber(held[3])
if holder and holder_ends <= now then
  redis.call('DEL', holder_key)
  holder = false
end
local function wake_head()
  local head = redis.call('LINDEX', queue, 0)
  if head then
    redis.call('PUBLISH', ARGV[7] .. head, 'released')
  end
end

if op == 'acquire' or op == 'try' then
  local ttl_us, waiter_ttl_us = tonumber(ARGV[5]), tonumber(ARGV[6])
  if ttl_us == nil or ttl_us < 1 or id == nil or id == '' then
    return redis.error_reply('ERR ratelock: fair_lock acquire needs a grant id and a lease of at least 1 µs')
  end
  local head = redis.call('LINDEX', queue, 0)
  if not holder and (not head or head == id) then
    redis.call('LREM', queue, 0, id)
    redis.call('ZREM', places, id)
    local fence, text = mint_fence(counter, now)
    redis.call('HSET', holder_key, 'i', id, 'f', text, 'e', int(now + ttl_us))
    expire_at(holder_key, now + ttl_us)
    return { 1, fence, 0 }
  end
  local retry = 0
  if holder then
    retry = holder_ends - now
  elseif head then
    retry = tonumber(redis.call('ZSCORE', places, head)) - now
  end
  if op == 'try' then
    return { 0, retry, 0 }
  end
  local position
  if redis.call('ZSCORE', places, id) then
    position = redis.call('LPOS', queue, id) + 1
  else
    position = redis.call('RPUSH', queue, id)
  end
  redis.call('ZADD', places, int(now + waiter_ttl_us), id)
  local last = tonumber(redis.call('ZRANGE', places, -1, -1, 'WITHSCORES')[2])
  expire_at(queue, last)
  expire_at(places, last)
  return { 0, math.min(retry, math.floor(waiter_ttl_us / 2)), position }
end

local function is_grant()
  return holder == id and holder_fence == tonumber(ARGV[4])
end

if op == 'release' then
  if not is_grant() then
    return { 0, 0, 0 }
  end
  redis.call('DEL', holder_key)
  wake_head()
  return { 1, 0, 0 }
end

if op == 'extend' then
  if not is_grant() then
    return { 0, 0, 0 }
  end
  local ends = now + tonumber(ARGV[5])
  redis.call('HSET', holder_key, 'e', int(ends))
  expire_at(holder_key, ends)
  return { 1, 0, 0 }
end

if op == 'withdraw' then
  local removed = redis.call('LREM', queue, 0, id)
  redis.call('ZREM', places, id)
  if removed == 0 then
    return { 0, 0, 0 }
  end
  if not holder then
    wake_head()
  end
  return { 1, 0, 0 }
end

if op == 'state' then
  local last = stored(redis.call('GET', counter), counter) or 0
  if holder then
    return { holder_ends - now, holder_fence, last, redis.call('LLEN', queue) }
  end
  return { 0, 0, last, redis.call('LLEN', queue) }
end

return redis.error_reply('ERR ratelock: fair_lock has no operation ' .. tostring(op))
