-- fence.lua — the fencing-token helper of the lock scripts, placed after prelude.lua in front of every
-- script that calls next_fence (and only those: a helper defined here is a closure made on every call,
-- which the limiter's script has no use for).

-- The next fencing token of the lock whose counter is `counter`: above the last one and at least `now`
-- (so tokens keep rising when the counter is lost). A counter at 2^53 - 1 cannot mint another token
-- that every client reads exactly: the call fails (only tampering or 2^53 grants get there).
local function next_fence(counter, now)
  local last = stored(redis.call('GET', counter), counter) or 0
  if last >= MAX_EXACT then
    error({ err = 'ERR ratelock: the fencing counter at ' .. counter .. ' is exhausted (2^53 - 1)' })
  end
  return math.max(last + 1, now)
end
