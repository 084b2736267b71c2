'use strict'
// Redis Sentinel secured as charts set it up, from Node: the password `s3cret` on the master, the replica
// and the sentinels, and TLS on every process (`rediss+sentinel://` with a private CA). Limits, locks and
// a lock waiter's wake-up go through it; an untrusted certificate or a wrong password is a configuration
// error, never an outage `onError: 'allow'` admits. A group whose sentinels have a password of their own
// (`m4ster` on the master, `s3ntinel` on the sentinels) is served with `sentinelPassword`.

const assert = require('node:assert/strict')
const { test } = require('node:test')

const { DistributedLock, Limiter } = require('../../bindings-node')
const { kitBinaries, SecuredSentinelGroup, SplitSentinelGroup } = require('./kit-processes')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

test('rediss+sentinel:// with a password and tlsRootCa: limits, locks and wake-ups; refusals are configuration errors', async () => {
  const group = await SecuredSentinelGroup.startSecured(kitBinaries())
  try {
    const { url, ca } = group
    assert.match(url, /^rediss\+sentinel:\/\/:s3cret@/)
    const limiter = new Limiter({ url, tlsRootCa: ca })
    const allowed = []
    for (let i = 0; i < 3; i++) allowed.push((await limiter.hit('sentinel:k', '2/minute')).allowed)
    assert.deepEqual(allowed, [true, true, false])

    const holder = new DistributedLock('sentinel:job', { url, tlsRootCa: ca })
    assert.ok((await holder.acquire({ timeoutMs: 2000 })) > 0)
    const waiter = new DistributedLock('sentinel:job', { url, tlsRootCa: ca })
    const granted = waiter.acquire({ timeoutMs: 10_000 }).then(() => Date.now())
    await sleep(300)
    const releasedAt = Date.now()
    await holder.release()
    // The holder's lease (30 s) outlasts the wait: only the release's message wakes the waiter in time.
    const wokenAfter = (await granted) - releasedAt
    assert.ok(wokenAfter < 2000, `woken ${wokenAfter} ms after the release`)
    await waiter.release()

    const untrusted = new Limiter({ url, onError: 'allow', timeoutMs: 2000 })
    await assert.rejects(untrusted.hit('sentinel:u', '2/minute'), (err) => err.code === 'ERR_RATELOCK_CONFIGURATION' && /certificate/i.test(err.message))
    const wrong = new Limiter({ url: url.replace(':s3cret@', ':wrong@'), tlsRootCa: ca, onError: 'allow', timeoutMs: 2000 })
    await assert.rejects(wrong.hit('sentinel:w', '2/minute'), (err) => err.code === 'ERR_RATELOCK_CONFIGURATION' && /password/i.test(err.message))
  } finally {
    await group.stop()
  }
})

test('sentinelPassword: the sentinels own password when it differs from the master\'s', async () => {
  const group = await SplitSentinelGroup.startSplit(kitBinaries())
  try {
    const { url } = group
    assert.match(url, /^redis\+sentinel:\/\/:m4ster@/)
    const limiter = new Limiter({ url, sentinelPassword: 's3ntinel' })
    const allowed = []
    for (let i = 0; i < 3; i++) allowed.push((await limiter.hit('split:k', '2/minute')).allowed)
    assert.deepEqual(allowed, [true, true, false])
    const lock = new DistributedLock('split:job', { url, sentinelPassword: 's3ntinel', sentinelUsername: 'default' })
    assert.ok((await lock.acquire({ timeoutMs: 2000 })) > 0)
    await lock.release()

    // The refusal names the options as Node spells them.
    const configuration = (named) => (err) => err.code === 'ERR_RATELOCK_CONFIGURATION' && err.message.includes(named)
    const wrong = new Limiter({ url, sentinelPassword: 'wrong', onError: 'allow', timeoutMs: 2000 })
    await assert.rejects(wrong.hit('split:w', '2/minute'), configuration('sentinelPassword'))
    const nobody = { url, sentinelUsername: 'nobody', sentinelPassword: 's3ntinel', timeoutMs: 2000 }
    await assert.rejects(new DistributedLock('split:n', nobody).tryAcquire(), configuration('sentinelUsername'))
    const none = new Limiter({ url, onError: 'allow', timeoutMs: 2000 })
    await assert.rejects(none.hit('split:n', '2/minute'), configuration('password'))
  } finally {
    await group.stop()
  }
})

test('sentinelPassword and sentinelUsername are refused where no sentinel reads them', async () => {
  const invalid = (name) => (err) => err.code === 'ERR_RATELOCK_INVALID_ARGUMENT' && err.message.includes(name)
  // Types are checked at construction, the store options at the first call (lazy start).
  assert.throws(() => new Limiter({ url: 'redis+sentinel://127.0.0.1:1/m', sentinelPassword: 7 }), invalid('sentinelPassword'))
  const plain = { url: 'redis://127.0.0.1:6379/', sentinelPassword: 's' }
  await assert.rejects(new Limiter({ ...plain, onError: 'allow' }).hit('k', '1/second'), invalid('sentinelPassword'))
  await assert.rejects(new DistributedLock('k', plain).tryAcquire(), invalid('sentinelPassword'))
  const alone = { url: 'redis+sentinel://127.0.0.1:1/m', sentinelUsername: 'app' }
  await assert.rejects(new Limiter(alone).hit('k', '1/second'), invalid('sentinelPassword'))
})
