'use strict'
// The Node package on a real Redis Cluster (three masters): multi-rule hits on keys spread over the
// slots never meet CROSSSLOT and count exactly, and every lock kind works on names spread over the
// slots, with one holder at a time; a cluster over TLS (rediss+cluster://) checks its nodes against a
// private CA.

const assert = require('node:assert/strict')
const { after, before, test } = require('node:test')

const { DistributedLock, FairLock, Limiter, ReadWriteLock, Semaphore } = require('../../bindings-node')
const { RedisCluster } = require('./redis-cluster')

let cluster
before(async () => {
  cluster = await RedisCluster.start()
})
after(async () => {
  await cluster.close()
})

test('hits on keys over many slots, several rules per call, exact counts', async () => {
  const limiter = new Limiter({ url: cluster.url })
  const rules = '3/minute; 100/hour using sliding_window; 50/minute using sliding_log'
  const keys = Array.from({ length: 200 }, (_, n) => `user:${n}`)
  const decisions = await Promise.all(keys.flatMap((key) => [1, 2, 3, 4].map(() => limiter.hit(key, rules))))
  for (let k = 0; k < keys.length; k++) {
    const allowed = decisions.slice(k * 4, k * 4 + 4).filter((d) => d.allowed).length
    assert.equal(allowed, 3, `${keys[k]}: 3 of 4 allowed`)
  }
  await limiter.reset('user:0', rules)
  assert.equal((await limiter.hit('user:0', rules)).remaining, 2)
})

test('every lock kind on names over many slots', async () => {
  const url = cluster.url
  for (let n = 0; n < 10; n++) {
    const lock = new DistributedLock(`job:${n}`, { url, ttlMs: 5000 })
    const token = await lock.acquire({ timeoutMs: 2000 })
    assert.equal(await new DistributedLock(`job:${n}`, { url }).tryAcquire(), false)
    assert.equal(lock.fencingToken, token)
    await lock.release()
    const seats = new Semaphore(`seats:${n}`, 2, { url })
    const permit = await seats.acquire({ timeoutMs: 2000 })
    assert.equal(await seats.inUse(), 1)
    await permit.release()
    const fair = new FairLock(`fair:${n}`, { url })
    const turn = await fair.acquire({ timeoutMs: 2000 })
    assert.equal(await fair.tryAcquire(), null)
    await turn.release()
    const rw = new ReadWriteLock(`rw:${n}`, { url })
    const reading = await rw.acquireRead({ timeoutMs: 2000 })
    assert.equal(await rw.tryAcquireWrite(), null)
    await reading.release()
    const writing = await rw.acquireWrite({ timeoutMs: 2000 })
    assert.equal((await rw.state()).writerFence, writing.fencingToken)
    await writing.release()
  }
})

test('one holder at a time for a lock on the cluster, tokens rising', async () => {
  const tokens = []
  let inside = 0
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      const lock = new DistributedLock('cluster:shared', { url: cluster.url, ttlMs: 5000 })
      for (let round = 0; round < 8; round++) {
        const token = await lock.acquire({ timeoutMs: 10_000 })
        inside += 1
        assert.equal(inside, 1, 'two holders at once')
        tokens.push(token)
        await new Promise((resolve) => setTimeout(resolve, 1))
        inside -= 1
        await lock.release()
      }
    }),
  )
  assert.equal(tokens.length, 48)
  assert.ok(tokens.every((token, i) => i === 0 || token > tokens[i - 1]), 'tokens rise in grant order')
})

test('rediss+cluster:// with tlsRootCa: every node over TLS; without the CA a configuration error', async () => {
  const tls = await RedisCluster.start({ tls: true })
  try {
    const limiter = new Limiter({ url: tls.tlsUrl, tlsRootCa: tls.caPem })
    for (let n = 0; n < 30; n++) {
      const key = `tls:${n}`
      const allowed = []
      for (let i = 0; i < 3; i++) allowed.push((await limiter.hit(key, '2/minute')).allowed)
      assert.deepEqual(allowed, [true, true, false], key)
    }
    const lock = new DistributedLock('tls:job', { url: tls.tlsUrl, tlsRootCa: tls.caPem })
    assert.ok((await lock.acquire({ timeoutMs: 2000 })) > 0)
    await lock.release()
    const untrusted = new Limiter({ url: tls.tlsUrl, onError: 'allow' })
    await assert.rejects(untrusted.hit('tls:0', '2/minute'), (err) => err.code === 'ERR_RATELOCK_CONFIGURATION' && /certificate/i.test(err.message))
  } finally {
    await tls.close()
  }
})
