-- lock_extend.lua — moves the end of the owner's lease; never re-acquires a lock that is gone.
--
-- KEYS[1]  lease hash <prefix>:{<escaped name>}:lock (fields o, n, f; see lock_acquire.lua)
-- ARGV[1]  owner token
-- ARGV[2]  new lease length in µs from now (PEXPIRE rounded up to whole ms)
--
-- Reply: 1 extended; 0 expired (nobody holds the lock): nothing changed;
--        -1 another owner holds it: nothing changed.
--
-- Mirrors: ratelock::algorithm::lease::extend (core/src/algorithm/lease.rs).

local owner = redis.call('HGET', KEYS[1], 'o')
if owner == false then
  return 0
end
if owner ~= ARGV[1] then
  return -1
end
redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil(tonumber(ARGV[2]) / 1000)))
return 1
