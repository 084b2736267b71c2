-- fence.lua — the fencing-token helper of the lock scripts, placed after prelude.lua in front of every
-- script that calls mint_fence (and only those: a helper defined here is a closure made on every call,
-- which the limiter's script has no use for).

-- Inside a Functions library (Redis >= 7) the counter is read and written by one SET ... GET (Redis
-- >= 6.2); EVALSHA, which Redis 6.0 runs too, reads it with GET and writes it with SET. (Known once, at
-- load, in a library; a table lookup per call by EVALSHA.)
local SET_GETS = redis.register_function ~= nil

-- The next fencing token of the lock whose counter is `counter`, written there: above the last one and
-- at least `now` (so tokens keep rising when the counter is lost). Returns the token and its text. A
-- counter at 2^53 - 1 cannot mint another token that every client reads exactly, and a counter no
-- ratelock code wrote is not read as one: the call fails, and the counter keeps its value.
local function mint_fence(counter, now)
  local text = string.format('%d', now)
  local raw
  if SET_GETS then
    raw = redis.call('SET', counter, text, 'GET')
  else
    raw = redis.call('GET', counter)
  end
  local last = tonumber(raw)
  if raw and not (last and last >= 0 and last < MAX_EXACT and last % 1 == 0) then
    -- Put back what SET ... GET replaced, then fail: `stored` refuses what no ratelock code writes;
    -- what it takes here is 2^53 - 1.
    if SET_GETS then
      redis.call('SET', counter, raw)
    end
    stored(raw, counter)
    error({ err = 'ERR ratelock: the fencing counter at ' .. counter .. ' is exhausted (2^53 - 1)' })
  end
  local fence = now
  if last and last >= now then
    fence = last + 1
    text = string.format('%d', fence)
  elseif SET_GETS then
    return fence, text
  end
  redis.call('SET', counter, text)
  return fence, text
end
