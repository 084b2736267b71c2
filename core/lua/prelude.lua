-- What every ratelock script shares: `tagged_script` (core/src/store/redis/script.rs) puts this in
-- front of each script's body, so a script can use these helpers without defining them.

-- The largest integer every path keeps exact (2^53 - 1): the bound on every number a script reads back
-- from its keys; and the largest `now` a caller may give (2^52, ratelock::clock::MAX_NOW_US), so that
-- `now` plus any span a script adds stays exact.
local MAX_EXACT = 9007199254740991
local MAX_NOW = 4503599627370496

-- A state or argument no ratelock code makes fails the call with `error({ err = 'ERR ratelock: ...' })`
-- (a protocol error for the client: it always raises). Written out where it happens rather than as a
-- helper: every helper here is a closure made on every call.

-- The time in µs since the Unix epoch: `given` when the caller passed one (an ARGV: an integer from 0
-- to 2^52), else the server clock (TIME).
local function now_us(given)
  if given ~= nil and given ~= '' then
    local now = tonumber(given)
    if now and now >= 0 and now <= MAX_NOW and now % 1 == 0 then
      return now
    end
    error({ err = 'ERR ratelock: now must be empty or an integer of µs from 0 to 2^52' })
  end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- A number read back from `key` (a GET, an HMGET field, a score): nil when absent; anything but an
-- integer from 0 to 2^53 - 1 is a state no ratelock script writes, and fails the call rather than
-- being taken for an empty key (which would admit) or a huge one (which would deny).
-- (One test on the common path: NaN fails `n >= 0`, a fraction fails `n % 1 == 0`.)
local function stored(raw, key)
  if not raw then
    return nil
  end
  local n = tonumber(raw)
  if n and n >= 0 and n <= MAX_EXACT and n % 1 == 0 then
    return n
  end
  error({ err = 'ERR ratelock: unexpected state at ' .. key .. ': ' .. string.sub(tostring(raw), 1, 64) })
end

-- An integer as a command argument (no exponent, no decimals).
local function int(x)
  return string.format('%d', x)
end
