-- lock_force_release.lua — deletes a lock's lease whoever holds it (an operator's tool, like Redisson's
-- forceUnlock) and tells waiters. The fencing counter stays, so later tokens still rise.
--
-- KEYS[1]  lease hash <prefix>:{<escaped name>}:lock
-- ARGV[1]  channel told of the release: <prefix>:{<escaped name>}:released
--
-- Reply: 1 if a lease was deleted, 0 if the lock was free.
--
-- Mirrors: the memory store's force_release (core/src/store/memory_locks.rs).
--
-- Sent in the call-tag envelope (ratelock::store::tagged_script): the client appends a per-call tag as
-- the last ARGV, taken off before this code runs (the ARGV listed above do not include it); the reply goes back
-- with it (appended to a table reply, else as {tag, reply}; an error as it is), so a reply can never be taken for
-- another call's.

local deleted = redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], 'released')
return deleted
