-- What every ratelock script shares: `tagged_script` (core/src/store/redis/script.rs) puts this in
-- front of each script's body, so a script can use these helpers without defining them.

-- The largest integer every path keeps exact (2^53 - 1): the bound on every number a script reads back
-- from its keys; and the largest `now` a caller may give (2^52, ratelock::clock::MAX_NOW_US), so that
-- `now` plus any span a script adds stays exact.
local MAX_EXACT = 9007199254740991
local MAX_NOW = 4503599627370496

-- Fails the call with `ERR ratelock: <text>` (a protocol error for the client: it always raises).
local function fail(text)
  error({ err = 'ERR ratelock: ' .. text })
end

-- The time in µs since the Unix epoch: `given` when the caller passed one (an ARGV: an integer from 0
-- to 2^52), else the server clock (TIME).
local function now_us(given)
  if given ~= nil and given ~= '' then
    local now = tonumber(given)
    if now == nil or now < 0 or now > MAX_NOW or now ~= math.floor(now) then
      fail('now must be empty or an integer of µs from 0 to 2^52')
    end
    return now
  end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- A number read back from `key` (a GET, an HMGET field, a score): nil when absent; anything but an
-- integer from 0 to 2^53 - 1 is a state no ratelock script writes, and fails the call rather than
-- being taken for an empty key (which would admit) or a huge one (which would deny).
local function stored(raw, key)
  if raw == false or raw == nil then
    return nil
  end
  local n = tonumber(raw)
  if n == nil or n < 0 or n > MAX_EXACT or n ~= math.floor(n) then
    fail('unexpected state at ' .. key .. ': ' .. string.sub(tostring(raw), 1, 64))
  end
  return n
end

-- The next fencing token of the lock whose counter is `counter`: above the last one and at least `now`
-- (so tokens keep rising when the counter is lost). A counter at 2^53 - 1 cannot mint another token
-- that every client reads exactly: the call fails (only tampering or 2^53 grants get there).
local function next_fence(counter, now)
  local last = stored(redis.call('GET', counter), counter) or 0
  if last >= MAX_EXACT then
    fail('the fencing counter at ' .. counter .. ' is exhausted (2^53 - 1)')
  end
  return math.max(last + 1, now)
end

-- An integer as a command argument (no exponent, no decimals).
local function int(x)
  return string.format('%d', x)
end
