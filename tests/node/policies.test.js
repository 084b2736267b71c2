'use strict'
// Bans, lists and shadow mode through the Node limiter, on the memory store and on Redis: what the
// shared vectors cannot show (a limiter in shadow, bad arguments named, an entry change during an
// outage, two limiters on one Redis).

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { after, before, describe, test } = require('node:test')

const ratelock = require('../../bindings-node')
const { RedisServer } = require('./redis-server')

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

const fresh = () => `policy:${randomUUID()}`

for (const store of ['memory', 'redis']) {
  const url = () => (store === 'memory' ? undefined : redis.url)
  describe(`on the ${store} store`, () => {
    test('a limiter in shadow lets denials through and spends as enforcement does', async () => {
      const shadow = new ratelock.Limiter({ url: url(), prefix: 'shadowed', shadow: true })
      const key = fresh()
      assert.equal((await shadow.hit(key, '1/minute')).wouldDeny, false)
      const second = await shadow.hit(key, '1/minute')
      assert.deepEqual([second.allowed, second.wouldDeny, second.remaining], [true, true, 0])
      assert.ok(second.retryAfterMs > 59_000)
      await shadow.block(key, 60_000)
      const banned = await shadow.peek(key, '1/minute')
      assert.deepEqual([banned.allowed, banned.wouldDeny, banned.reason], [true, true, 'ban'])
      if (store === 'redis') {
        const enforcing = new ratelock.Limiter({ url: url(), prefix: 'shadowed' })
        assert.equal((await enforcing.hit(key, '1/minute')).allowed, false, 'the ban is in the store')
      }
    })

    test('a shadow rule lets only its own denial through', async () => {
      const limiter = new ratelock.Limiter({ url: url() })
      const key = fresh()
      const rules = '1/minute shadow; 2/minute'
      assert.ok((await limiter.hit(key, rules)).allowed)
      const trial = await limiter.hit(key, rules)
      assert.deepEqual([trial.allowed, trial.wouldDeny, trial.rule], [true, true, '1/minute shadow'])
      // The request went through, so the enforced rule was charged for it; the shadow rule, which denied, was not.
      assert.equal((await limiter.peek(key, '2/minute')).allowed, false, 'the enforced rule is spent')
      const shadow = await limiter.peek(key, '1/minute')
      assert.ok(shadow.retryAfterMs > 59_000 && shadow.retryAfterMs <= 60_000, `the shadow rule's wait: ${shadow.retryAfterMs}`)
    })

    test('entries: block, unblock, deny, allow and clear', async () => {
      const limiter = new ratelock.Limiter({ url: url() })
      const key = fresh()
      await limiter.block(key, 30_000)
      const banned = await limiter.hit(key, '10/second')
      assert.deepEqual([banned.allowed, banned.reason], [false, 'ban'])
      assert.deepEqual([await limiter.unblock(key), await limiter.unblock(key)], [true, false])
      await limiter.allow(key, 30_000)
      assert.equal((await limiter.hit(key, '1/hour')).reason, 'allow_list')
      await limiter.deny(key, 30_000)
      assert.equal((await limiter.hit(key, '1/hour')).reason, 'deny_list')
      assert.deepEqual([await limiter.clear(key), await limiter.clear(key)], [true, false])
    })
  })
}

test('bad arguments are named', async () => {
  const limiter = new ratelock.Limiter()
  for (const [call, name] of [
    [() => limiter.block('k', 0), 'durationMs'],
    [() => limiter.deny('k', -1), 'ttlMs'],
    [() => limiter.allow('k', 400 * 86_400_000), 'ttlMs'],
    [() => limiter.block('k', Number.NaN), 'durationMs'],
    [() => limiter.unblock('k', { nowMs: -5 }), 'nowMs'],
  ]) {
    await assert.rejects(call, (error) => error instanceof ratelock.InvalidArgumentError && error.message.includes(name), name)
  }
  await assert.rejects(limiter.hit('k', '5/minute block 1 hour shadow'), ratelock.InvalidRuleError)
})

test('a limiter in shadow refuses a blocking rule (its ban would deny for every limiter)', async () => {
  const rollout = new ratelock.Limiter({ shadow: true })
  for (let i = 0; i < 3; i++) {
    await assert.rejects(rollout.hit('k', '2/minute block 1 hour'), (error) => error instanceof ratelock.InvalidRuleError && /shadow cannot block/.test(error.message))
    assert.throws(() => rollout.hitSync('k', '2/minute block 1 hour'), ratelock.InvalidRuleError)
  }
})

test('an entry change during an outage rejects, whatever onError says', async () => {
  const server = await RedisServer.start()
  await server.close()
  const limiter = new ratelock.Limiter({ url: server.url, onError: 'allow', timeoutMs: 200 })
  assert.equal((await limiter.hit('k', '1/second')).degraded, true)
  await assert.rejects(limiter.block('k', 60_000), ratelock.StoreUnavailableError)
})

test('the deny cache answers a denied key without the store', async () => {
  const limiter = new ratelock.Limiter({ url: redis.url, prefix: `cache${randomUUID().slice(0, 8)}`, denyCache: 1000 })
  const key = fresh()
  assert.equal((await limiter.hit(key, '1/minute')).cached, false)
  const denied = await limiter.hit(key, '1/minute')
  assert.deepEqual([denied.allowed, denied.cached], [false, false])
  const before = await limitCalls()
  for (let i = 0; i < 200; i++) {
    const again = await limiter.hit(key, '1/minute')
    assert.deepEqual([again.allowed, again.cached], [false, true])
  }
  assert.equal(await limitCalls(), before, 'no round trip while the denial holds')
  await assert.rejects(async () => new ratelock.Limiter({ denyCache: 0 }).hit('k', '1/s'), ratelock.InvalidArgumentError)
})

/** Every limit call the server ran (function, script or module), from INFO commandstats. */
async function limitCalls() {
  const info = await redis.command('INFO', 'commandstats')
  return [...String(info).matchAll(/^cmdstat_(?:evalsha|fcall|ratelock\.limit):calls=(\d+)/gim)].reduce((sum, m) => sum + Number(m[1]), 0)
}

test('a refund gives units back, on both stores', async () => {
  for (const url of [undefined, redis.url]) {
    const limiter = new ratelock.Limiter({ url, prefix: 'refunds' })
    const key = fresh()
    assert.equal((await limiter.hit(key, '2/minute using fixed_window', { cost: 2 })).remaining, 0)
    const after = await limiter.refund(key, '2/minute using fixed_window', { cost: 2 })
    assert.deepEqual([after.allowed, after.remaining], [true, 0], 'a peek of 2 fits again')
    await assert.rejects(limiter.refund(key, '2/minute', { cost: 3 }), ratelock.CostExceedsCapacityError)
  }
  const down = await RedisServer.start()
  await down.close()
  const limiter = new ratelock.Limiter({ url: down.url, onError: 'allow', timeoutMs: 200 })
  await assert.rejects(limiter.refund('k', '1/second'), ratelock.StoreUnavailableError)
})

test('the deny cache holds a denial no longer than denyCacheMaxAgeMs', async () => {
  const limiter = new ratelock.Limiter({ denyCache: 100, denyCacheMaxAgeMs: 100 })
  const nowMs = 1_763_800_000_000
  await limiter.hit('k', '1/hour', { nowMs })
  assert.equal((await limiter.hit('k', '1/hour', { nowMs })).cached, false)
  assert.equal((await limiter.hit('k', '1/hour', { nowMs: nowMs + 99.999 })).cached, true)
  const later = await limiter.hit('k', '1/hour', { nowMs: nowMs + 100 })
  assert.deepEqual([later.allowed, later.cached], [false, false], 'past the max age the store answers again')
  await assert.rejects(async () => new ratelock.Limiter({ denyCacheMaxAgeMs: 5 }).hit('k', '1/s'), ratelock.InvalidArgumentError)
})

for (const store of ['memory', 'redis']) {
  test(`waiters are paced in booking order, and an aborted wait gives its booking back (${store})`, async () => {
    const url = store === 'memory' ? undefined : redis.url
    const limiter = new ratelock.Limiter({ url, prefix: 'reservations' })
    const key = fresh()
    // Paced: the k-th caller acts no sooner than k slots of 100 ms after the first (a late timer
    // only shortens the next wait, it never lets one act early).
    const started = performance.now()
    for (let i = 0; i < 4; i++) {
      const booked = await limiter.wait(key, '10/second burst 1', { maxWaitMs: 2000 })
      assert.ok(booked.allowed && booked.retryAfterMs <= 100, `wait ${i}: ${booked.retryAfterMs} ms`)
      assert.ok(performance.now() - started >= 100 * i - 5, `caller ${i} acted early`)
    }
    const refused = await limiter.reserve(key, '10/second burst 1', { maxWaitMs: 0 })
    assert.deepEqual([refused.allowed, refused.retryAfterMs > 0], [false, true])
    await assert.rejects(limiter.reserve(key, '5/minute using fixed_window', { maxWaitMs: 10 }), ratelock.InvalidArgumentError)
    await assert.rejects(limiter.reserve(key, '5/minute', {}), ratelock.InvalidArgumentError)

    const job = fresh()
    await limiter.hit(job, '1/second burst 1')
    const controller = new AbortController()
    const waiting = limiter.wait(job, '1/second burst 1', { maxWaitMs: 5000, signal: controller.signal })
    setTimeout(() => controller.abort(new Error('gave up')), 50)
    await assert.rejects(waiting, /gave up/)
    const next = await limiter.peek(job, '1/second burst 1')
    assert.ok(next.retryAfterMs < 1000, `the booking was not given back: ${next.retryAfterMs} ms`)

    // Aborted while a booking for now was being made: rejected, and the unit given back (it resolved
    // allowed, the unit spent).
    const now = fresh()
    const aborting = new AbortController()
    const booking = limiter.wait(now, '5/minute', { maxWaitMs: 5000, signal: aborting.signal })
    aborting.abort(new Error('gave up at once'))
    await assert.rejects(booking, /gave up at once/)
    const unspent = (await limiter.peek(fresh(), '5/minute')).remaining
    assert.equal((await limiter.peek(now, '5/minute')).remaining, unspent, 'the booking was given back')
  })

  test(`a wait for a slot past 24.8 days (Node's longest timer) still waits (${store})`, async () => {
    const limiter = new ratelock.Limiter({ url: store === 'memory' ? undefined : redis.url, prefix: 'reservations' })
    const key = fresh()
    const rules = '1 per 30 days burst 1'
    await limiter.hit(key, rules)
    const controller = new AbortController()
    let settled = false
    const waiting = limiter.wait(key, rules, { maxWaitMs: 31 * 86_400_000, signal: controller.signal }).finally(() => { settled = true })
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.equal(settled, false, 'a 30-day wait ended within 200 ms')
    controller.abort(new Error('gave up'))
    await assert.rejects(waiting, /gave up/)
    const next = await limiter.peek(key, rules)
    assert.ok(next.retryAfterMs > 29 * 86_400_000 && next.retryAfterMs <= 30 * 86_400_000, `${next.retryAfterMs} ms: the booking was not given back`)
  })

  test(`concurrent waiters are served in booking order with one call each (${store})`, async () => {
    const limiter = new ratelock.Limiter({ url: store === 'memory' ? undefined : redis.url, prefix: 'reservations' })
    const key = fresh()
    const rules = '10/second burst 1'
    const started = performance.now()
    await limiter.hit(key, rules)
    const before = store === 'memory' ? 0 : await limitCalls()
    const served = []
    await Promise.all([0, 1, 2, 3, 4].map(async (n) => {
      const booked = await limiter.wait(key, rules, { maxWaitMs: 2000 })
      assert.ok(booked.allowed)
      served.push([n, performance.now() - started])
    }))
    // Booked in the order they asked (the n-th a slot (n + 1) × 100 ms on), served in that order, none
    // before its slot, each with the one call that booked it (no polling).
    assert.deepEqual(served.map(([n]) => n), [0, 1, 2, 3, 4])
    for (const [n, at] of served) assert.ok(at >= 100 * (n + 1) - 5, `waiter ${n} acted at ${at.toFixed(1)} ms, before its slot`)
    if (store === 'redis') assert.equal(await limitCalls() - before, 5)
  })
}
