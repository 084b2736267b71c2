-- limit.lua — checks a key's ban or list entry, then every rule of the key, in one call, all or nothing
-- but for shadow rules (ratelock's `hit` and `peek`).
--
-- KEYS[i]   storage key of rule i: <prefix>:{<escaped user key>}:<rule id> (one hash slot for all)
-- KEYS[n+1] the key's ban or list entry: <prefix>:{<escaped user key>}:standing (the same slot)
-- KEYS[n+2] optional: the key's override: <prefix>:{<escaped user key>}:override (the same slot); the
--           ARGV count tells whether it is there (without it, no override is read). Other limits for
--           the rules of the same window (ratelock::algorithm::overrides), as "code limit period burst"
--           per rule, joined by ","; a token bucket under an override counts in the fields
--           t:<override rule id> and l:<override rule id> of its hash
-- ARGV[1]   "hit" (spend on every rule when every rule allows), "peek" (never spend), "refund" (give
--           back `cost` units of every rule, then answer as "peek") or "reserve" (a hit that, when some
--           rule denies, books the earliest slot within the longest wait instead: see below)
-- ARGV[2]   now in microseconds since the Unix epoch, or "" to read the server clock (TIME)
-- ARGV[3]   cost, an integer >= 1
-- ARGV[5i-1..5i+3] for rule i (i from 1): algorithm code (g, tb, lb, fw, sw, sl), limit, period in µs,
--           burst, and block in µs (how long a denial of the rule bans the key; 0: it does not; -1: the
--           rule is in shadow, and never blocks).
--           A calendar window (a fixed window on the calendar: ratelock::Calendar) sends its unit's code
--           (ch, cd, cw, cm, cy: hour, day, ISO week, month, year) and, in place of the period, its
--           offset from UTC in minutes (an integer within ±1439).
-- ARGV[last] in "reserve" mode only: the longest wait in µs. Every rule must be gcra, token_bucket or
--           leaky_bucket, and none in shadow. When every rule allows now, it is a hit; else, when the
--           longest wait is within it, every rule is decided again at now + wait and spent there, and
--           each replies allowed, with that wait as its retry_after and its reset_after from now; else
--           nothing is spent and the reply is the denial (ratelock::algorithm::reserve). A reservation never bans.
-- At most 100 rules (ratelock::MAX_RULES): more is an error, so no call can hold the server for long.
--
-- Reply: the reason (0 the rules, 1 a ban, 2 the deny list, 3 the allow list), then a flat array of 5
-- integers per rule, in rule order: allowed (1/0), limit, remaining, reset_after µs, retry_after µs
-- (0 when allowed).
--   A live entry answers first (ratelock::algorithm::standing::Entry::answer): a ban or a deny-list
--   entry denies every rule with nothing left and its end as the wait; an allow-list entry admits
--   every rule with its capacity left; nothing is read or spent.
--   When any enforcing rule denies, nothing is spent and every rule reports its figures as they stand
--   (ratelock::algorithm::outcomes); a rule that would have allowed then says allowed = 1. A shadow
--   rule that denies stops nothing: the other rules are spent, it is not (ratelock::algorithm::spends).
--   A hit that a blocking rule denies bans the key for the longest such block, and answers as the ban
--   does.
-- Errors: "ERR ratelock: ..." for bad arguments or a cost above a rule's capacity (checked for every
-- rule before anything is read), or an entry no ratelock code writes.
-- Writes: in "hit" mode, the allowed rules' state when every enforcing rule allows, the ban when a
-- blocking rule denies;
-- every written key gets a TTL (PEXPIRE or PX) of at least one second. A fixed or sliding window's key
-- gets it at its window's first hit, and later hits in that window keep it: it ends where the window
-- (the next window, for a sliding one) ends, a point that does not move, or a second after that first
-- hit when later. A token bucket's key lives until both of the buckets it may hold (the rule's own and
-- an override's) are full again: a write never shortens it. In "refund" mode, the refunded rules' state, keeping each key's TTL.
-- Sliding-log rules drop entries that left their window in both modes (that changes no decision).
--
-- Mirrors: ratelock::algorithm::{gcra, token_bucket, leaky_bucket, fixed_window, sliding_window,
-- sliding_log}::decide and ratelock::algorithm::standing in core/src/algorithm/. Every quantity is an
-- integer below 2^50, exact in Lua's doubles; the sliding-window weighting is f64 arithmetic in the
-- same order as the Rust code.
-- Numbers go to redis.call as numbers, not strings: Redis, Valkey and Dragonfly write an integral
-- double below 2^53 in plain digits (%.17g or an integer printer), as string.format('%d') would, for
-- less work. Concatenation would not (%.14g), so a sliding-log member's stamp is still formatted.
--
-- Two paths compute the same thing. One rule on a key with no entry (nearly every call) takes the fast
-- path at the top, before anything else is defined: EVALSHA runs this whole chunk on every call, so
-- each function defined on the way would be a closure allocated per call, and each table a garbage
-- object. It writes out idiv, cdiv, px and settle operation for operation and builds no table but the
-- reply, the rule's numbers (which a Functions library keeps, by their text, so that it reads a rule's
-- arguments once rather than on every call) and, for a rule that blocks, the one closure that bans;
-- so its replies, writes and TTLs are the
-- general path's. Anything else (several rules, an entry, or any bad argument) goes on to the general
-- path below, which also gives every error.
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

-- ratelock: definitions
-- The longest ban or list entry: 366 days in µs (ratelock::MAX_PERIOD).
local MAX_BLOCK = 31622400000000

-- The fast path's rules as read from their arguments, by those arguments' text (cost, code, limit,
-- period, burst, block): what the numbers are and whether the fast path takes them. Only a Functions
-- library keeps it from one call to the next: it runs this block once, when it loads, and
-- `redis.register_function` exists only then. EVALSHA runs this block on every call, where that name
-- is nil, so nothing is kept and each call reads its arguments. At most MAX_READ_RULES texts are kept:
-- one more starts the table anew, so no caller can grow it without bound.
local MAX_READ_RULES = 1000
local read_rules = nil
if redis.register_function then read_rules = {} end
local read_rule_count = 0
-- ratelock: end of definitions

if (#KEYS == 2 or #KEYS == 3) and #ARGV == 8 then
  local mode, code = ARGV[1], ARGV[4]
  local takes, cost, limit, period, burst, block, bucket, capacity
  local text, rule = nil, nil
  if read_rules then
    text = ARGV[3] .. ' ' .. code .. ' ' .. ARGV[5] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7] .. ' ' .. ARGV[8]
    rule = read_rules[text]
  end
  if rule then
    takes, cost, limit, period, burst, block, bucket, capacity =
      rule[1], rule[2], rule[3], rule[4], rule[5], rule[6], rule[7], rule[8]
  else
    cost, limit, period, burst = tonumber(ARGV[3]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
    block = tonumber(ARGV[8])
    bucket = code == 'g' or code == 'tb' or code == 'lb'
    capacity = limit
    if bucket then capacity = burst end
    -- The general path's checks, all passed (cost % 1 == 0 is its cost == math.floor(cost) for a
    -- finite cost).
    takes = cost ~= nil and limit ~= nil and period ~= nil and burst ~= nil and block ~= nil
      and cost >= 1 and cost % 1 == 0 and limit >= 1 and period >= 1 and burst >= 1 and cost <= capacity
      and (block >= 0 or ARGV[8] == '-1') and block % 1 == 0 and block <= MAX_BLOCK
      and (bucket or code == 'fw' or code == 'sw' or code == 'sl')
    if read_rules then
      if read_rule_count >= MAX_READ_RULES then read_rules, read_rule_count = {}, 0 end
      read_rules[text] = { takes, cost, limit, period, burst, block, bucket, capacity }
      read_rule_count = read_rule_count + 1
    end
  end
  -- Taken when the mode is one it serves, and (below) when the key holds no entry.
  local fast = takes and (mode == 'hit' or mode == 'peek')
  -- One read for the entry, the override and, for GCRA, the rule's own state (a string key).
  local gcra = code == 'g'
  local held = nil
  if fast then
    if gcra then
      held = redis.call('MGET', KEYS[2], KEYS[#KEYS], KEYS[1])
    else
      held = redis.call('MGET', KEYS[2], KEYS[#KEYS])
    end
  end
  if held and held[1] and (#KEYS == 2 or not held[2]) then
    -- A live ban or list entry and no override: the general path's answer of an entry, written out
    -- (nothing else is read or spent). A malformed or past entry goes on to the general path.
    local entry = held[1]
    local kind, ends = string.sub(entry, 1, 1), string.sub(entry, 2)
    if (kind == 'b' or kind == 'd' or kind == 'a') and #ends <= 16 and string.find(ends, '^%d+$') then
      local until_us, now = tonumber(ends), now_us(ARGV[2])
      if until_us <= MAX_EXACT and until_us > now then
        if kind == 'a' then return { 3, 1, limit, capacity, 0, 0 } end
        local wait = until_us - now
        if kind == 'b' then return { 1, 0, limit, 0, wait, wait } end
        return { 2, 0, limit, 0, wait, wait }
      end
    end
  end
  if held and (held[1] or held[2]) then
    -- No entry, and an override of one window (the general path's reading of it, for that one case):
    -- this rule's limit and burst when it is this rule's window, the rule as given when another's. A
    -- token bucket's override counts in fields of its own: the general path.
    fast = false
    if #KEYS == 3 and code ~= 'tb' and not held[1] then
      local c, l, p, b = string.match(held[2], '^(%l+) (%d+) (%-?%d+) (%d+)$')
      l, p, b = tonumber(l), tonumber(p), tonumber(b)
      if c ~= nil and l >= 1 and b >= 1 and l <= 1000000000 and b <= 1000000000 and p >= 1 then
        if c ~= code or p ~= period then
          fast = true
        else
          if not bucket then b = l end
          local held = l
          if bucket then held = b end
          if cost <= held then limit, burst, fast = l, b, true end
        end
      end
    end
  end
  if fast then
    local key, floor, hit = KEYS[1], math.floor, mode == 'hit'
    local now = now_us(ARGV[2])
    -- A hit this rule denies bans the key when the rule blocks: the general path's ban, written out.
    local ban = nil
    if hit and block > 0 then
      ban = function()
        local ttl = floor((block + 999) / 1000)
        if ttl * 1000 > block + 999 then ttl = ttl - 1 elseif (ttl + 1) * 1000 <= block + 999 then ttl = ttl + 1 end
        if ttl < 1000 then ttl = 1000 end
        redis.call('SET', KEYS[2], 'b' .. string.format('%d', now + block), 'PX', ttl)
        return { 1, 0, limit, 0, block, block }
      end
    end
    -- Each "q = floor(a / b), then one step each way" below is idiv(a, b); cdiv(a, b) is that on
    -- a + b - 1 for a > 0, else 0; px(us) is cdiv(us, 1000) raised to MIN_TTL_MS.

    if gcra then
      local a = period + limit - 1
      local t = floor(a / limit)
      if t * limit > a then t = t - 1 elseif (t + 1) * limit <= a then t = t + 1 end
      local tau = burst * t
      -- MGET answers nil for a key of another type too: a GET tells that apart (WRONGTYPE fails the
      -- call, as on the general path) whenever no state was read.
      local raw = held[3]
      if not raw then raw = redis.call('GET', key) end
      local tat = stored(raw, key) or now
      if tat < now then tat = now end
      local new_tat = tat + cost * t
      local allow_at = new_tat - tau
      if allow_at > now then
        local room = now + tau - tat
        if room < 0 then room = 0 end
        local remaining = floor(room / t)
        if remaining * t > room then remaining = remaining - 1 elseif (remaining + 1) * t <= room then remaining = remaining + 1 end
        if ban then return ban() end
        return { 0, 0, limit, remaining, tat - now, allow_at - now }
      end
      local room = now + tau - new_tat
      local remaining = floor(room / t)
      if remaining * t > room then remaining = remaining - 1 elseif (remaining + 1) * t <= room then remaining = remaining + 1 end
      if hit then
        local ttl, us = 0, new_tat - now
        if not (us <= 0) then
          a = us + 1000 - 1
          ttl = floor(a / 1000)
          if ttl * 1000 > a then ttl = ttl - 1 elseif (ttl + 1) * 1000 <= a then ttl = ttl + 1 end
        end
        if ttl < 1000 then ttl = 1000 end
        redis.call('SET', key, new_tat, 'PX', ttl)
      end
      return { 0, 1, limit, remaining, new_tat - now, 0 }
    end

    if code == 'tb' then
      -- gcd(limit, period), then tokens scaled by period/g, refilled limit/g per µs.
      local x, y = limit, period
      while y ~= 0 do
        local q = floor(x / y)
        if q * y > x then q = q - 1 elseif (q + 1) * y <= x then q = q + 1 end
        x, y = y, x - q * y
      end
      local scale = floor(period / x)
      if scale * x > period then scale = scale - 1 elseif (scale + 1) * x <= period then scale = scale + 1 end
      local rate = floor(limit / x)
      if rate * x > limit then rate = rate - 1 elseif (rate + 1) * x <= limit then rate = rate + 1 end
      local full, need = burst * scale, cost * scale
      local v = redis.call('HMGET', key, 't', 'l')
      local tokens, last = stored(v[1], key), stored(v[2], key)
      if tokens == nil or last == nil then
        tokens, last = full, now
      end
      if now > last then
        local elapsed, a = now - last, full - tokens
        local refill = 0
        if not (a <= 0) then
          a = a + rate - 1
          refill = floor(a / rate)
          if refill * rate > a then refill = refill - 1 elseif (refill + 1) * rate <= a then refill = refill + 1 end
        end
        if elapsed >= refill then
          tokens = full
        else
          tokens = tokens + elapsed * rate
        end
      end
      -- A reservation may have left `last` ahead of now (rare): the general path's `ahead`, written out.
      local ahead = 0
      if last > now then ahead = last - now end
      if last < now then last = now end
      local denied = tokens < need
      local spare = 0
      if ahead > 0 and not denied then
        local a = tokens - need
        spare = floor(a / rate)
        if spare * rate > a then spare = spare - 1 elseif (spare + 1) * rate <= a then spare = spare + 1 end
        denied = spare < ahead
      end
      if not denied then tokens = tokens - need end
      local shown = tokens
      if ahead > 0 then
        local q = floor(tokens / rate)
        if q * rate > tokens then q = q - 1 elseif (q + 1) * rate <= tokens then q = q + 1 end
        if ahead <= q then shown = tokens - ahead * rate else shown = 0 end
      end
      local remaining = floor(shown / scale)
      if remaining * scale > shown then remaining = remaining - 1 elseif (remaining + 1) * scale <= shown then remaining = remaining + 1 end
      local reset, a = 0, full - tokens
      if not (a <= 0) then
        a = a + rate - 1
        reset = floor(a / rate)
        if reset * rate > a then reset = reset - 1 elseif (reset + 1) * rate <= a then reset = reset + 1 end
      end
      reset = reset + ahead
      if denied then
        local retry
        a = need - tokens
        if a <= 0 then
          retry = ahead - spare
        else
          a = a + rate - 1
          retry = floor(a / rate)
          if retry * rate > a then retry = retry - 1 elseif (retry + 1) * rate <= a then retry = retry + 1 end
          retry = retry + ahead
        end
        if ban then return ban() end
        return { 0, 0, limit, remaining, reset, retry }
      end
      if hit then
        local ttl = 0
        if not (reset <= 0) then
          a = reset + 1000 - 1
          ttl = floor(a / 1000)
          if ttl * 1000 > a then ttl = ttl - 1 elseif (ttl + 1) * 1000 <= a then ttl = ttl + 1 end
        end
        if ttl < 1000 then ttl = 1000 end
        redis.call('HSET', key, 't', tokens, 'l', last)
        -- The general path's keep_for: the hash may hold an override's bucket too.
        if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
      end
      return { 0, 1, limit, remaining, reset, 0 }
    end

    if code == 'lb' then
      local a = period + limit - 1
      local t = floor(a / limit)
      if t * limit > a then t = t - 1 elseif (t + 1) * limit <= a then t = t + 1 end
      local full, pour = burst * t, cost * t
      local v = redis.call('HMGET', key, 'v', 'l')
      local level, last = stored(v[1], key), stored(v[2], key)
      if level == nil or last == nil then
        level, last = 0, now
      end
      if now > last then
        level = level - (now - last)
        if 0 > level then level = 0 end
      else
        level = level + (last - now)
      end
      last = now
      local denied = level + pour > full
      if not denied then level = level + pour end
      a = full - level
      if 0 > a then a = 0 end
      local remaining = floor(a / t)
      if remaining * t > a then remaining = remaining - 1 elseif (remaining + 1) * t <= a then remaining = remaining + 1 end
      if denied then
        if ban then return ban() end
        return { 0, 0, limit, remaining, level, level + pour - full }
      end
      if hit then
        local ttl = 0
        if not (level <= 0) then
          a = level + 1000 - 1
          ttl = floor(a / 1000)
          if ttl * 1000 > a then ttl = ttl - 1 elseif (ttl + 1) * 1000 <= a then ttl = ttl + 1 end
        end
        if ttl < 1000 then ttl = 1000 end
        redis.call('HSET', key, 'v', level, 'l', last)
        redis.call('PEXPIRE', key, ttl)
      end
      return { 0, 1, limit, remaining, level, 0 }
    end

    if code == 'fw' then
      local window = floor(now / period)
      if window * period > now then window = window - 1 elseif (window + 1) * period <= now then window = window + 1 end
      local v = redis.call('HMGET', key, 'w', 'c')
      local count = 0
      local w, c = stored(v[1], key), stored(v[2], key)
      if w == window then count = c or 0 end
      local reset = (window + 1) * period - now
      if count + cost > limit then
        local remaining = limit - count
        if 0 > remaining then remaining = 0 end
        if ban then return ban() end
        return { 0, 0, limit, remaining, reset, reset }
      end
      count = count + cost
      if hit and w == window then
        -- The window's first hit set the expiry: its end (or a second on, when later).
        redis.call('HSET', key, 'c', count)
      elseif hit then
        local ttl = 0
        if not (reset <= 0) then
          local a = reset + 1000 - 1
          ttl = floor(a / 1000)
          if ttl * 1000 > a then ttl = ttl - 1 elseif (ttl + 1) * 1000 <= a then ttl = ttl + 1 end
        end
        if ttl < 1000 then ttl = 1000 end
        redis.call('HSET', key, 'w', window, 'c', count)
        redis.call('PEXPIRE', key, ttl)
      end
      return { 0, 1, limit, limit - count, reset, 0 }
    end

    if code == 'sw' then
      local window = floor(now / period)
      if window * period > now then window = window - 1 elseif (window + 1) * period <= now then window = window + 1 end
      local rem = period - (now - window * period)
      local v = redis.call('HMGET', key, 'w', 'c', 'p')
      local w, current, previous = stored(v[1], key), stored(v[2], key) or 0, stored(v[3], key) or 0
      local cur, prev = 0, 0
      if w == window then
        cur, prev = current, previous
      elseif w ~= nil and w + 1 == window then
        prev = current
      end
      local used = prev * rem / period + cur
      if used + cost > limit then
        -- The wait until the weighted count leaves room: settle() of the general path, written out.
        local retry
        if cur + cost <= limit then
          local room = limit - cur - cost
          local guess = rem - floor(room * period / prev)
          if 0 > guess then guess = 0 end
          if rem < guess then guess = rem end
          while guess < rem and not (prev * (rem - guess) / period + cur + cost <= limit) do guess = guess + 1 end
          while guess > 0 and prev * (rem - (guess - 1)) / period + cur + cost <= limit do guess = guess - 1 end
          retry = guess
        else
          local room = limit - cost
          local guess = period - floor(room * period / cur)
          if 0 > guess then guess = 0 end
          if period < guess then guess = period end
          while guess < period and not (cur * (period - guess) / period + cost <= limit) do guess = guess + 1 end
          while guess > 0 and cur * (period - (guess - 1)) / period + cost <= limit do guess = guess - 1 end
          retry = rem + guess
        end
        local remaining = floor(limit - used)
        if 0 > remaining then remaining = 0 end
        local reset = 0
        if cur > 0 then reset = rem + period elseif prev > 0 then reset = rem end
        if ban then return ban() end
        return { 0, 0, limit, remaining, reset, retry }
      end
      local count = cur + cost
      local reset = 0
      if count > 0 then reset = rem + period elseif prev > 0 then reset = rem end
      local remaining = floor(limit - (used + cost))
      if 0 > remaining then remaining = 0 end
      if hit and w == window then
        -- The window's first hit set the expiry: the next window's end (or a second on, when later).
        redis.call('HSET', key, 'c', count)
      elseif hit then
        local ttl = 0
        if not (reset <= 0) then
          local a = reset + 1000 - 1
          ttl = floor(a / 1000)
          if ttl * 1000 > a then ttl = ttl - 1 elseif (ttl + 1) * 1000 <= a then ttl = ttl + 1 end
        end
        if ttl < 1000 then ttl = 1000 end
        redis.call('HSET', key, 'w', window, 'c', count, 'p', prev)
        redis.call('PEXPIRE', key, ttl)
      end
      return { 0, 1, limit, remaining, reset, 0 }
    end

    -- code == 'sl'
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - period)
    local count = redis.call('ZCARD', key)
    local newest = nil
    if count > 0 then newest = stored(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2], key) end
    local reset = 0
    if newest ~= nil then
      reset = newest + period - now
      if 0 > reset then reset = 0 end
    end
    if count + cost > limit then
      local remaining = limit - count
      if 0 > remaining then remaining = 0 end
      local k = count + cost - limit
      local kth = stored(redis.call('ZRANGE', key, k - 1, k - 1, 'WITHSCORES')[2], key)
      if ban then return ban() end
      return { 0, 0, limit, remaining, reset, kth + period - now }
    end
    local latest = now
    if newest ~= nil and newest > now then latest = newest end
    reset = latest + period - now
    if hit then
      local stamp = int(now)
      local taken = redis.call('ZCOUNT', key, stamp, stamp)
      if cost == 1 then
        redis.call('ZADD', key, stamp, string.format('%s:%05d', stamp, taken))
      else
        -- Several units at once (rare): one ZADD of them all, as the general path sends.
        local args = {}
        for n = taken, taken + cost - 1 do
          args[#args + 1] = stamp
          args[#args + 1] = string.format('%s:%05d', stamp, n)
        end
        redis.call('ZADD', key, unpack(args))
      end
      local ttl = 0
      if not (reset <= 0) then
        local a = reset + 1000 - 1
        ttl = floor(a / 1000)
        if ttl * 1000 > a then ttl = ttl - 1 elseif (ttl + 1) * 1000 <= a then ttl = ttl + 1 end
      end
      if ttl < 1000 then ttl = 1000 end
      redis.call('PEXPIRE', key, ttl)
    end
    return { 0, 1, limit, limit - count - cost, reset, 0 }
  end
end

-- The general path: several rules, checked together, and every error.

-- ratelock: definitions (from here to "end of definitions": functions and constant tables that use
-- nothing of the call; the Functions library defines them once, at load, and EVALSHA on every call
-- that takes the general path)

-- The math functions the general path uses, as upvalues (a global's field is two lookups per use), set
-- by each call (a Functions library cannot read `math` while it loads).
local floor, max, min = nil, nil, nil

-- floor(a / b) for non-negative integers below 2^53, exact despite rounding in the float division.
local function idiv(a, b)
  local q = floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

local function cdiv(a, b)
  if a <= 0 then return 0 end
  return idiv(a + b - 1, b)
end

-- A key's TTL in ms: when its state stops mattering, but at least one second. An expired key and a
-- live one decide alike (the state then says "fully restored"), so the floor changes no decision; it
-- keeps a call sequence with an explicit `now` (tests, client clocks) from racing real-time expiry.
local MIN_TTL_MS = 1000
local function px(us)
  return max(cdiv(us, 1000), MIN_TTL_MS)
end

-- A token bucket's hash may hold two buckets, the rule's own (t, l) and an override's (t:<id>,
-- l:<id>): a write of one gives the key `ttl` ms unless it already ends later, so that it lives until
-- both are full again (then either reads as a new bucket).
local function keep_for(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end

local function gcd(a, b)
  while b ~= 0 do
    a, b = b, a - idiv(a, b) * b
  end
  return a
end

-- GCRA: state is the theoretical arrival time (a string integer, µs).
-- (year, month) of a count of days since 1970-01-01 (ratelock::rule::calendar's civil_from_days,
-- Howard Hinnant's algorithm, for days on or after the epoch).
local function civil_from_days(days)
  local z = days + 719468
  local era = idiv(z, 146097)
  local doe = z - era * 146097
  local yoe = idiv(doe - idiv(doe, 1460) + idiv(doe, 36524) - idiv(doe, 146096), 365)
  local doy = doe - (365 * yoe + idiv(yoe, 4) - idiv(yoe, 100))
  local mp = idiv(5 * doy + 2, 153)
  local month = mp - 9
  if mp < 10 then month = mp + 3 end
  local year = yoe + era * 400
  if month <= 2 then year = year + 1 end
  return year, month
end

-- Days since 1970-01-01 of the first of a month (its inverse, days_from_civil, on day 1).
local function days_from_civil(year, month)
  if month <= 2 then year = year - 1 end
  local era = idiv(year, 400)
  local yoe = year - era * 400
  local mp = month - 3
  if month <= 2 then mp = month + 9 end
  local doe = yoe * 365 + idiv(yoe, 4) - idiv(yoe, 100) + idiv(153 * mp + 2, 5)
  return era * 146097 + doe - 719468
end

-- The calendar window `now` falls in (ratelock::Calendar::window): its index and the µs it ends at.
-- An instant before the epoch at the offset is taken as the epoch.
local function calendar_window(code, offset_minutes, now)
  local HOUR, DAY = 3600000000, 86400000000
  local offset = offset_minutes * 60000000
  local here = max(now + offset, 0)
  local day = idiv(here, DAY)
  local index, ends
  if code == 'ch' then
    index = idiv(here, HOUR)
    ends = (index + 1) * HOUR
  elseif code == 'cd' then
    index, ends = day, (day + 1) * DAY
  elseif code == 'cw' then
    -- 1970-01-01 was a Thursday: day + 3 counts from the Monday before it.
    index = idiv(day + 3, 7)
    ends = ((index + 1) * 7 - 3) * DAY
  elseif code == 'cm' then
    local year, month = civil_from_days(day)
    index = year * 12 + month - 1
    if month == 12 then year, month = year + 1, 1 else month = month + 1 end
    ends = days_from_civil(year, month) * DAY
  else
    local year = civil_from_days(day)
    index, ends = year, days_from_civil(year + 1, 1) * DAY
  end
  return index, ends - offset
end

local function rule_gcra(key, now, cost, limit, period, burst)
  local t = cdiv(period, limit)
  local tau = burst * t
  local tat = stored(redis.call('GET', key), key) or now
  if tat < now then tat = now end
  local new_tat = tat + cost * t
  local allow_at = new_tat - tau
  local remaining = idiv(max(now + tau - tat, 0), t)
  if allow_at > now then
    return { 0, limit, remaining, tat - now, allow_at - now }
  end
  return { 1, limit, idiv(now + tau - new_tat, t), new_tat - now, 0, remaining, tat - now }, function()
    redis.call('SET', key, new_tat, 'PX', px(new_tat - now))
  end
end

-- Token bucket: hash {t = scaled tokens, l = last refill µs}; tokens scaled by period/g, refill limit/g per µs.
local function rule_token(key, now, cost, limit, period, burst, _, tf, lf)
  local g = gcd(limit, period)
  local scale, rate = idiv(period, g), idiv(limit, g)
  local capacity, need = burst * scale, cost * scale
  local v = redis.call('HMGET', key, tf, lf)
  local tokens, last = stored(v[1], key), stored(v[2], key)
  if tokens == nil or last == nil then
    tokens, last = capacity, now
  end
  if now > last then
    local elapsed = now - last
    if elapsed >= cdiv(capacity - tokens, rate) then
      tokens = capacity
    else
      tokens = tokens + elapsed * rate
    end
  end
  -- A reservation may have left `last` ahead of now: `tokens` is the bucket then, and the refill from
  -- now until then is not in it yet (token_bucket::available).
  local ahead = 0
  if last > now then ahead = last - now end
  if last < now then last = now end
  local function available(held)
    if ahead <= idiv(held, rate) then return held - ahead * rate end
    return 0
  end
  local remaining, wait = idiv(available(tokens), scale), ahead + cdiv(capacity - tokens, rate)
  if tokens < need then
    return { 0, limit, remaining, wait, ahead + cdiv(need - tokens, rate) }
  end
  if idiv(tokens - need, rate) < ahead then
    return { 0, limit, remaining, wait, ahead - idiv(tokens - need, rate) }
  end
  tokens = tokens - need
  local reset = ahead + cdiv(capacity - tokens, rate)
  return { 1, limit, idiv(available(tokens), scale), reset, 0, remaining, wait }, function()
    redis.call('HSET', key, tf, tokens, lf, last)
    keep_for(key, px(reset))
  end
end

-- Leaky bucket (meter): hash {v = water as µs of drain time, l = last update µs}.
local function rule_leaky(key, now, cost, limit, period, burst)
  local t = cdiv(period, limit)
  local capacity, pour = burst * t, cost * t
  local v = redis.call('HMGET', key, 'v', 'l')
  local level, last = stored(v[1], key), stored(v[2], key)
  if level == nil or last == nil then
    level, last = 0, now
  end
  -- A reservation may have left `last` ahead of now: as of now, the funnel also holds what drains
  -- until then.
  if now > last then level = max(level - (now - last), 0) else level = level + (last - now) end
  last = now
  local remaining, drained = idiv(max(capacity - level, 0), t), level
  if level + pour > capacity then
    return { 0, limit, remaining, level, level + pour - capacity }
  end
  level = level + pour
  return { 1, limit, idiv(capacity - level, t), level, 0, remaining, drained }, function()
    redis.call('HSET', key, 'v', level, 'l', last)
    redis.call('PEXPIRE', key, px(level))
  end
end

-- Fixed window: hash {w = window index, c = count}, for the window that ends at `ends`.
local function count_in_window(key, now, cost, limit, window, ends)
  local v = redis.call('HMGET', key, 'w', 'c')
  local count = 0
  local w, c = stored(v[1], key), stored(v[2], key)
  if w == window then count = c or 0 end
  local reset = ends - now
  local remaining = max(limit - count, 0)
  if count + cost > limit then
    return { 0, limit, remaining, reset, reset }
  end
  count = count + cost
  return { 1, limit, limit - count, reset, 0, remaining, reset }, function(alone)
    if alone and w == window then
      -- The window's first hit set the expiry (its end, or a second on): it stands.
      redis.call('HSET', key, 'c', count)
    else
      redis.call('HSET', key, 'w', window, 'c', count)
      redis.call('PEXPIRE', key, px(reset))
    end
  end
end

local function rule_fixed(key, now, cost, limit, period)
  local window = idiv(now, period)
  return count_in_window(key, now, cost, limit, window, (window + 1) * period)
end

-- A calendar window (code ch, cd, cw, cm or cy) at `offset` minutes east of UTC.
local function rule_calendar(key, now, cost, limit, offset, _, code)
  local window, ends = calendar_window(code, offset, now)
  return count_in_window(key, now, cost, limit, window, ends)
end

-- Smallest value in 0..max for which the monotone predicate holds, starting from a guess.
local function settle(guess, max, fits)
  while guess < max and not fits(guess) do guess = guess + 1 end
  while guess > 0 and fits(guess - 1) do guess = guess - 1 end
  return guess
end

-- Sliding window counter: hash {w = current window index, c = its count, p = previous window's count}.
local function rule_sliding(key, now, cost, limit, period)
  local window = idiv(now, period)
  local rem = period - (now - window * period)
  local v = redis.call('HMGET', key, 'w', 'c', 'p')
  local w, current, previous = stored(v[1], key), stored(v[2], key) or 0, stored(v[3], key) or 0
  local cur, prev = 0, 0
  if w == window then
    cur, prev = current, previous
  elseif w ~= nil and w + 1 == window then
    prev = current
  end
  local used = prev * rem / period + cur
  local function reset_for(c)
    if c > 0 then return rem + period elseif prev > 0 then return rem else return 0 end
  end
  local remaining, wait = max(floor(limit - used), 0), reset_for(cur)
  if used + cost > limit then
    local retry
    if cur + cost <= limit then
      local room = limit - cur - cost
      local guess = min(max(rem - floor(room * period / prev), 0), rem)
      retry = settle(guess, rem, function(wait)
        return prev * (rem - wait) / period + cur + cost <= limit
      end)
    else
      local room = limit - cost
      local guess = min(max(period - floor(room * period / cur), 0), period)
      retry = rem + settle(guess, period, function(into)
        return cur * (period - into) / period + cost <= limit
      end)
    end
    return { 0, limit, remaining, wait, retry }
  end
  local count = cur + cost
  local reset = reset_for(count)
  return { 1, limit, max(floor(limit - (used + cost)), 0), reset, 0, remaining, wait }, function(alone)
    if alone and w == window then
      -- The window's first hit set the expiry (the next window's end, or a second on): it stands.
      redis.call('HSET', key, 'c', count)
    else
      redis.call('HSET', key, 'w', window, 'c', count, 'p', prev)
      redis.call('PEXPIRE', key, px(reset))
    end
  end
end

-- Sliding log: sorted set, score = µs of an admitted unit, member "<µs>:<n>" unique even for equal scores,
-- n numbering the µs's units from 0 in five digits (a log holds at most 10,000), so that the
-- greatest member of a µs is its latest unit: a refund's ZPOPMAX takes it, and the next hit's ZCOUNT
-- numbers on from the units left without reusing a name (unpadded, "9" sorted after "11").
local function rule_log(key, now, cost, limit, period)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - period)
  local count = redis.call('ZCARD', key)
  local newest = nil
  if count > 0 then newest = stored(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2], key) end
  local remaining, wait = max(limit - count, 0), 0
  if newest ~= nil then wait = max(newest + period - now, 0) end
  if count + cost > limit then
    local k = count + cost - limit
    local kth = stored(redis.call('ZRANGE', key, k - 1, k - 1, 'WITHSCORES')[2], key)
    return { 0, limit, remaining, wait, kth + period - now }
  end
  local latest = now
  if newest ~= nil and newest > now then latest = newest end
  local reset = latest + period - now
  return { 1, limit, limit - count - cost, reset, 0, remaining, wait }, function()
    local stamp = int(now)
    local taken = redis.call('ZCOUNT', key, stamp, stamp)
    local args = {}
    for n = taken, taken + cost - 1 do
      args[#args + 1] = stamp
      args[#args + 1] = string.format('%s:%05d', stamp, n)
    end
    redis.call('ZADD', key, unpack(args))
    redis.call('PEXPIRE', key, px(reset))
  end
end

local rules_by_code = {
  g = rule_gcra, tb = rule_token, lb = rule_leaky,
  fw = rule_fixed, sw = rule_sliding, sl = rule_log,
  ch = rule_calendar, cd = rule_calendar, cw = rule_calendar, cm = rule_calendar, cy = rule_calendar,
}

-- Five zeros per rule, up to 100 rules, so that a reply is made at its full size at once (it would
-- otherwise grow, and be copied, as it fills). Only a Functions library has them: it makes them once,
-- at load; EVALSHA would make them on every call.
local ZEROS = nil
if redis.register_function then
  ZEROS = {}
  for i = 1, 500 do ZEROS[i] = 0 end
end

-- The general path's rule lists as checked from their arguments, by those arguments' text (the cost,
-- then each rule's code, limit, period, burst and block): a Functions library keeps them from one
-- call to the next, as it keeps the fast path's rules, so that a call reads its rules' arguments once
-- rather than on every call. At most MAX_READ_RULES lists are kept; one more starts anew.
local read_rule_lists = nil
if redis.register_function then read_rule_lists = {} end
local read_rule_list_count = 0

-- The calendar windows' codes (ratelock::CalendarUnit::code).
local CALENDAR_UNITS = { ch = true, cd = true, cw = true, cm = true, cy = true }

-- Rule i's code, limit, period, burst and block as the call's arguments `argv` give them, checked,
-- also against the call's `cost`; an error reply in place of the code when bad.
local function checked_rule(argv, i, cost)
  local at = 3 + 5 * (i - 1)
  local code = argv[at + 1]
  local limit, period, burst = tonumber(argv[at + 2]), tonumber(argv[at + 3]), tonumber(argv[at + 4])
  local block = tonumber(argv[at + 5])
  -- A bucket's burst bounds one call's cost, a window's limit does (no table: none is built per call).
  local bucket = code == 'g' or code == 'tb' or code == 'lb'
  local window = code == 'fw' or code == 'sw' or code == 'sl'
  -- A calendar window's "period" is its offset from UTC in minutes.
  local calendar = CALENDAR_UNITS[code] ~= nil and period ~= nil and period % 1 == 0 and period >= -1439
    and period <= 1439
  if not (bucket or window or calendar) or limit == nil or period == nil or burst == nil or limit < 1
    or (period < 1 and not calendar) or burst < 1 or block == nil or (block < 0 and argv[at + 5] ~= '-1')
    or block % 1 ~= 0
    or block > MAX_BLOCK then
    return redis.error_reply('ERR ratelock: bad rule arguments for key ' .. i)
  end
  local capacity = limit
  if bucket then capacity = burst end
  if cost > capacity then
    return redis.error_reply('ERR ratelock: cost exceeds capacity of rule ' .. i)
  end
  return code, limit, period, burst, block
end
-- ratelock: end of definitions

-- The call's own arguments, checked before any rule is looked at.
floor, max, min = math.floor, math.max, math.min
local mode = ARGV[1]
if mode ~= 'hit' and mode ~= 'peek' and mode ~= 'refund' and mode ~= 'reserve' then
  return redis.error_reply('ERR ratelock: mode must be "hit", "peek", "refund" or "reserve"')
end
local now = now_us(ARGV[2])
local cost = tonumber(ARGV[3])
if cost == nil or cost < 1 or cost ~= floor(cost) then
  return redis.error_reply('ERR ratelock: cost must be an integer >= 1')
end
local reserving = mode == 'reserve'
local tail = 0
if reserving then tail = 1 end
-- Without the override key, every key but the last is a rule's.
local rules, with_override = #KEYS - 1, false
if #ARGV - tail == 3 + 5 * (#KEYS - 2) then rules, with_override = #KEYS - 2, true end
if #ARGV ~= 3 + 5 * rules + tail or rules < 1 then
  return redis.error_reply('ERR ratelock: expected 5 arguments per rule key, and the entry key last')
end
if rules > 100 then
  return redis.error_reply('ERR ratelock: at most 100 rules in one call (ratelock::MAX_RULES)')
end

-- Under an override, replaced[i] = { limit, burst, token fields or nil } for each rule it replaces.
local replaced = nil

-- Every rule's code, limit, period, burst and block as given, checked once (five entries per rule);
-- kept by a Functions library for the next call with the same arguments, so never changed.
local given = nil

-- Rule i's code, limit, period, burst and block; under an override, the replaced limit and burst
-- (checked when the override was read).
local function rule_arguments(i)
  local at = 5 * (i - 1)
  local code, limit, period, burst, block = given[at + 1], given[at + 2], given[at + 3], given[at + 4], given[at + 5]
  if replaced and replaced[i] then limit, burst = replaced[i][1], replaced[i][2] end
  return code, limit, period, burst, block
end

-- The hash fields of rule i's token bucket: its own, or an override's.
local function token_fields(i)
  if replaced and replaced[i] and replaced[i][3] then return replaced[i][3], replaced[i][4] end
  return 't', 'l'
end
local given_text = nil
if read_rule_lists then
  given_text = table.concat(ARGV, ' ', 3, 3 + 5 * rules)
  given = read_rule_lists[given_text]
end
if not given then
  given = {}
  for i = 1, rules do
    local code, limit, period, burst, block = checked_rule(ARGV, i, cost)
    if type(code) == 'table' then return code end
    local at = 5 * (i - 1)
    given[at + 1], given[at + 2], given[at + 3], given[at + 4], given[at + 5] = code, limit, period, burst, block
  end
  if read_rule_lists then
    if read_rule_list_count >= MAX_READ_RULES then read_rule_lists, read_rule_list_count = {}, 0 end
    read_rule_lists[given_text] = given
    read_rule_list_count = read_rule_list_count + 1
  end
end

-- "reserve" (ratelock::algorithm::reserve): the last ARGV is the longest wait in µs; only the bucket
-- algorithms can hold a booking ahead.
local max_wait = nil
if reserving then
  max_wait = tonumber(ARGV[#ARGV])
  if max_wait == nil or max_wait < 0 or max_wait % 1 ~= 0 or max_wait > MAX_BLOCK then
    return redis.error_reply('ERR ratelock: the longest wait must be an integer of µs from 0 to 366 days')
  end
  for i = 1, rules do
    local code, _, _, _, block = rule_arguments(i)
    if code ~= 'g' and code ~= 'tb' and code ~= 'lb' then
      return redis.error_reply('ERR ratelock: rule ' .. i .. ' cannot be reserved (gcra, token_bucket and leaky_bucket can)')
    end
    if block < 0 then
      return redis.error_reply('ERR ratelock: rule ' .. i .. ' is in shadow, and a reservation enforces its rules')
    end
  end
end

-- The key's override (ratelock::algorithm::overrides::Overrides): each rule takes the limit and burst
-- of the first override rule of its window (the same code and period); text no ratelock code writes
-- fails the call.
local override_key = KEYS[rules + 2]
local spec = with_override and redis.call('GET', override_key)
if spec then
  local windows, count = {}, 0
  for part in string.gmatch(spec, '[^,]+') do
    local code, limit, period, burst = string.match(part, '^(%l+) (%d+) (%-?%d+) (%d+)$')
    limit, period, burst = tonumber(limit), tonumber(period), tonumber(burst)
    if code == nil or limit < 1 or burst < 1 or limit > 1000000000 or burst > 1000000000
      or (CALENDAR_UNITS[code] == nil and period < 1) then
      count = -1
      break
    end
    count = count + 1
    local window = code .. ' ' .. string.format('%d', period)
    if windows[window] == nil then windows[window] = { code, limit, period, burst } end
  end
  if count < 1 or #spec > 4096 then
    error({ err = 'ERR ratelock: unexpected state at ' .. override_key .. ': ' .. string.sub(spec, 1, 64) })
  end
  replaced = {}
  for i = 1, rules do
    local code, limit, period, burst = rule_arguments(i)
    local found = windows[code .. ' ' .. string.format('%d', period)]
    if found and (found[2] ~= limit or (found[4] ~= burst and (code == 'g' or code == 'tb' or code == 'lb'))) then
      local new_burst = found[4]
      if not (code == 'g' or code == 'tb' or code == 'lb') then new_burst = found[2] end
      local capacity = found[2]
      if code == 'g' or code == 'tb' or code == 'lb' then capacity = new_burst end
      if cost > capacity then
        return redis.error_reply('ERR ratelock: cost exceeds capacity of rule ' .. i)
      end
      replaced[i] = { found[2], new_burst }
      if code == 'tb' then
        -- ratelock::Rule::id of the override rule: tb<limit>/<period ms>[b<burst>].
        local id = 'tb' .. string.format('%d', found[2]) .. '/' .. string.format('%d', period / 1000)
        if new_burst ~= found[2] then id = id .. 'b' .. string.format('%d', new_burst) end
        replaced[i][3], replaced[i][4] = 't:' .. id, 'l:' .. id
      end
    end
  end
end
-- "refund" (ratelock::algorithm::refund::refund): give back `cost` units of every rule, never below an
-- empty state nor beyond the current window, keeping each key's TTL; then answer as "peek".
if mode == 'refund' then
  for i = 1, rules do
    local code, limit, period, burst = rule_arguments(i)
    local key = KEYS[i]
    if code == 'g' then
      local tat = stored(redis.call('GET', key), key)
      if tat ~= nil and tat > now then
        redis.call('SET', key, max(tat - cost * cdiv(period, limit), now), 'KEEPTTL')
      end
    elseif code == 'tb' then
      local g = gcd(limit, period)
      local scale, rate = idiv(period, g), idiv(limit, g)
      local capacity = burst * scale
      local tf, lf = token_fields(i)
      local v = redis.call('HMGET', key, tf, lf)
      local tokens, last = stored(v[1], key), stored(v[2], key)
      if tokens ~= nil and last ~= nil then
        if now > last then
          if now - last >= cdiv(capacity - tokens, rate) then
            tokens = capacity
          else
            tokens = tokens + (now - last) * rate
          end
        end
        redis.call('HSET', key, tf, min(tokens + cost * scale, capacity), lf, max(last, now))
      end
    elseif code == 'lb' then
      local v = redis.call('HMGET', key, 'v', 'l')
      local level, last = stored(v[1], key), stored(v[2], key)
      if level ~= nil and last ~= nil then
        if now > last then level = max(level - (now - last), 0) else level = level + (last - now) end
        redis.call('HSET', key, 'v', max(level - cost * cdiv(period, limit), 0), 'l', now)
      end
    elseif code == 'fw' or code == 'sw' or CALENDAR_UNITS[code] then
      local v = redis.call('HMGET', key, 'w', 'c')
      local w, c = stored(v[1], key), stored(v[2], key)
      local current = idiv(now, period)
      if CALENDAR_UNITS[code] then current = calendar_window(code, period, now) end
      if w ~= nil and w == current then
        redis.call('HSET', key, 'c', max((c or 0) - cost, 0))
      end
    else
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now - period)
      local count = redis.call('ZCARD', key)
      if count > 0 then redis.call('ZPOPMAX', key, min(cost, count)) end
    end
  end
  mode = 'peek'
end

-- The key's entry (ratelock::algorithm::standing::Entry): while it lasts, it answers for every rule.
local entry_key = KEYS[rules + 1]
local entry = redis.call('GET', entry_key)
if entry then
  local kind, ends = string.sub(entry, 1, 1), string.sub(entry, 2)
  local until_us = nil
  if string.find(ends, '^%d+$') and #ends <= 16 then until_us = tonumber(ends) end
  if (kind ~= 'b' and kind ~= 'd' and kind ~= 'a') or until_us == nil or until_us > MAX_EXACT then
    error({ err = 'ERR ratelock: unexpected state at ' .. entry_key .. ': ' .. string.sub(entry, 1, 64) })
  end
  if until_us > now then
    local reason, reply, wait = 3, { 3 }, until_us - now
    if kind == 'b' then reason = 1 elseif kind == 'd' then reason = 2 end
    reply[1] = reason
    for i = 1, rules do
      local code, limit, _, burst = rule_arguments(i)
      local at = 1 + 5 * (i - 1)
      if reason == 3 then
        local capacity = limit
        if code == 'g' or code == 'tb' or code == 'lb' then capacity = burst end
        reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] = 1, limit, capacity, 0, 0
      else
        reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] = 0, limit, 0, wait, wait
      end
    end
    return reply
  end
end


-- Every rule decided: its outcome (an allowed one also carries its remaining and reset as they stand,
-- in fields 6 and 7), and the write that spends it. The request spends when every enforcing rule
-- allows: a shadow rule (block -1) that denies stops nothing (ratelock::algorithm::spends).
local outcomes, writes, all_allowed, spends = {}, {}, true, true
for i = 1, rules do
  local code, limit, period, burst, block = rule_arguments(i)
  local tf, lf = token_fields(i)
  local outcome, write = rules_by_code[code](KEYS[i], now, cost, limit, period, burst, code, tf, lf)
  if outcome[1] == 0 then
    all_allowed = false
    if block >= 0 then spends = false end
  end
  outcomes[i], writes[i] = outcome, write
end
-- A reservation that must wait, and may: every rule decided again at the slot and spent there, its
-- figures seen from now (reserve::booked); the keys live until their reset from now.
if reserving and not all_allowed then
  local wait = 0
  for i = 1, rules do
    if outcomes[i][1] == 0 and outcomes[i][5] > wait then wait = outcomes[i][5] end
  end
  if wait <= max_wait then
    local slot, booked, booked_writes, fits = now + wait, {}, {}, true
    for i = 1, rules do
      local code, limit, period, burst = rule_arguments(i)
      local tf, lf = token_fields(i)
      local outcome, write = rules_by_code[code](KEYS[i], slot, cost, limit, period, burst, code, tf, lf)
      booked[i], booked_writes[i] = outcome, write
      if outcome[1] == 0 then fits = false end
    end
    if fits then
      for i = 1, rules do
        booked_writes[i]()
        booked[i][4], booked[i][5] = booked[i][4] + wait, wait
        keep_for(KEYS[i], px(booked[i][4]))
      end
      outcomes, all_allowed, spends = booked, true, true
    end
  end
elseif (mode == 'hit' or reserving) and spends then
  -- Keys named twice in one call may change under their later reads: then every rule writes all of
  -- its fields and its expiry (as the module does), else a window written within the window it holds
  -- keeps the expiry its first hit set.
  local alone = true
  if rules <= 8 then
    -- A few rules (the usual case) are compared pairwise, which builds no table.
    for i = 2, rules do
      for j = 1, i - 1 do
        if KEYS[i] == KEYS[j] then alone = false end
      end
    end
  else
    local named = {}
    for i = 1, rules do
      if named[KEYS[i]] then alone = false end
      named[KEYS[i]] = true
    end
  end
  -- A shadow rule that denied is not charged.
  for i = 1, rules do
    if outcomes[i][1] == 1 then writes[i](alone) end
  end
end
-- A hit that a blocking rule denies bans the key for the longest such block
-- (ratelock::algorithm::standing::ban_after and banned).
local ban = 0
if mode == 'hit' and not all_allowed then
  for i = 1, rules do
    local _, _, _, _, block = rule_arguments(i)
    if outcomes[i][1] == 0 and block > ban then ban = block end
  end
end
local reply, n = { 0 }, 1
if ZEROS then reply = { 0, unpack(ZEROS, 1, 5 * rules) } end
if ban > 0 then
  redis.call('SET', entry_key, 'b' .. int(now + ban), 'PX', px(ban))
  reply[1] = 1
  for i = 1, rules do
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] = 0, outcomes[i][2], 0, ban, ban
    n = n + 5
  end
  return reply
end
-- When any enforcing rule denies, nothing is spent, so every rule reports its figures as they stand.
for i = 1, rules do
  local answer = outcomes[i]
  if spends or answer[1] == 0 then
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] = answer[1], answer[2], answer[3], answer[4], answer[5]
  else
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] = 1, answer[2], answer[6], answer[7], 0
  end
  n = n + 5
end
return reply
