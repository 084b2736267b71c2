-- standing.lua — puts or removes one key's ban or list entry (ratelock's block, unblock, deny, allow
-- and clear).
--
-- KEYS[1]  the entry's key: <prefix>:{<escaped user key>}:standing
-- ARGV[1]  "set" or "remove"
-- ARGV[2]  now in microseconds since the Unix epoch, or "" to read the server clock (TIME)
-- ARGV[3]  set: the kind's letter (b a ban, d the deny list, a the allow list);
--          remove: the letters of the kinds to remove ("b" for unblock, "da" for clear)
-- ARGV[4]  set: µs from now until the entry ends, from 1 ms to 366 days
-- Reply: 1 when an entry was put or removed, else 0 (an entry of another kind, or none, or ended).
-- An entry is the kind's letter then its end in decimal µs, kept with a PX of at least one second
-- past `now`; limit.lua reads it in the same slot as the key's rules.
--
-- Mirrors: ratelock::algorithm::standing::StandingCall::apply.

local op, kinds = ARGV[1], ARGV[3]
local now = now_us(ARGV[2])
local key = KEYS[1]
if op == 'set' then
  local span = tonumber(ARGV[4])
  if (kinds ~= 'b' and kinds ~= 'd' and kinds ~= 'a') or span == nil or span < 1000 or span % 1 ~= 0
    or span > 31622400000000 then
    return redis.error_reply('ERR ratelock: bad entry arguments')
  end
  redis.call('SET', key, kinds .. int(now + span), 'PX', math.max(math.ceil(span / 1000), 1000))
  return 1
end
if op ~= 'remove' or kinds == nil or not string.find(kinds, '^[bda]+$') then
  return redis.error_reply('ERR ratelock: op must be "set" or "remove" with the kinds\' letters')
end
local entry = redis.call('GET', key)
if not entry then
  return 0
end
local kind, ends = string.sub(entry, 1, 1), string.sub(entry, 2)
local until_us = nil
if string.find(ends, '^%d+$') and #ends <= 16 then until_us = tonumber(ends) end
if (kind ~= 'b' and kind ~= 'd' and kind ~= 'a') or until_us == nil or until_us > MAX_EXACT then
  error({ err = 'ERR ratelock: unexpected state at ' .. key .. ': ' .. string.sub(entry, 1, 64) })
end
if until_us <= now or not string.find(kinds, kind, 1, true) then
  return 0
end
redis.call('DEL', key)
return 1
