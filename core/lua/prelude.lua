-- What every ratelock script shares: `tagged_script` (core/src/store/redis/script.rs) puts this in
-- front of each script's body, so a script can use these two helpers without defining them.

-- The time in µs since the Unix epoch: `given` when the caller passed one (an ARGV), else the server
-- clock (TIME).
local function now_us(given)
  local now = tonumber(given)
  if now ~= nil then
    return now
  end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- An integer as a command argument (no exponent, no decimals).
local function int(x)
  return string.format('%d', x)
end
