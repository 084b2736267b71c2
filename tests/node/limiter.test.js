'use strict'
// Limiter: many concurrent promises on one key get exact admission counts; every error type comes
// from a real cause; bad input is named; store failures follow `onError`; Buffer keys.

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { after, before, test } = require('node:test')

const ratelock = require('../../bindings-node')
const { RedisServer } = require('./redis-server')

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

const fresh = () => `node:${randomUUID()}`

for (const store of ['memory', 'redis']) {
  const url = () => (store === 'redis' ? redis.url : undefined)

  test(`${store}: 1000 concurrent hits on one key admit exactly the limit`, async () => {
    const limiter = new ratelock.Limiter({ url: url() })
    const key = fresh()
    const decisions = await Promise.all(Array.from({ length: 1000 }, () => limiter.hit(key, '300/hour')))
    assert.equal(decisions.filter((d) => d.allowed).length, 300)
    const denied = decisions.find((d) => !d.allowed)
    assert.ok(denied.retryAfterMs > 0 && denied.remaining === 0)
  })

  test(`${store}: every rule is checked at once and all or nothing`, async () => {
    const limiter = new ratelock.Limiter({ url: url() })
    const key = fresh()
    const rules = '3 per 10 seconds; 4/hour using sliding_log'
    const answers = []
    for (let i = 0; i < 5; i++) answers.push(await limiter.hit(key, rules))
    assert.deepEqual(
      answers.map((d) => [d.allowed, d.rule]),
      [true, true, true, false, false].map((allowed) => [allowed, '3 per 10 seconds']),
    )
    const peek = await limiter.peek(key, '4/hour using sliding_log')
    assert.equal(peek.remaining, 0, 'the denied hits took nothing from the hourly rule')
    await limiter.reset(key, rules)
    assert.equal((await limiter.hit(key, rules)).remaining, 2)
  })

  test(`${store}: Buffer keys and string keys with the same bytes are one key`, async () => {
    const limiter = new ratelock.Limiter({ url: url() })
    const key = fresh()
    await limiter.hit(key, '2/minute')
    const second = await limiter.hit(Buffer.from(key), '2/minute')
    assert.equal(second.remaining, 0)
    const binary = Buffer.from([0, 255, 123, 125])
    assert.ok((await limiter.hit(binary, '1/minute')).allowed)
    assert.ok(!(await limiter.hit(binary, '1/minute')).allowed)
  })

  test(`${store}: bad input is rejected with a named InvalidArgumentError or InvalidRuleError`, async () => {
    const limiter = new ratelock.Limiter({ url: url() })
    const bad = [
      [() => limiter.hit(null, '1/second'), ratelock.InvalidArgumentError, /`key`/],
      [() => limiter.hit(42, '1/second'), ratelock.InvalidArgumentError, /`key`/],
      [() => limiter.hit('k', null), ratelock.InvalidArgumentError, /`rules`/],
      [() => limiter.hit('k', 'ten per fortnight'), ratelock.InvalidRuleError, /fortnight|ten/],
      [() => limiter.hit('k', ''), ratelock.InvalidRuleError, /./],
      [() => limiter.hit('k', '1/second', { cost: -1 }), ratelock.InvalidArgumentError, /`cost`/],
      [() => limiter.hit('k', '1/second', { cost: 0 }), ratelock.InvalidArgumentError, /`cost`/],
      [() => limiter.hit('k', '1/second', { cost: 1.5 }), ratelock.InvalidArgumentError, /`cost`/],
      [() => limiter.hit('k', '1/second', { cost: NaN }), ratelock.InvalidArgumentError, /`cost`/],
      [() => limiter.hit('k', '1/second', { cost: 2 ** 60 }), ratelock.InvalidArgumentError, /`cost`/],
      [() => limiter.hit('k', '1/second', { cost: '1' }), ratelock.InvalidArgumentError, /`cost`/],
      [() => limiter.hit('k', '1/second', { nowMs: -5 }), ratelock.InvalidArgumentError, /`nowMs`/],
      [() => limiter.hit('k', '1/second', 'fast'), ratelock.InvalidArgumentError, /`options`/],
      [() => limiter.hit('k', '5/second', { cost: 9 }), ratelock.CostExceedsCapacityError, /capacity|cost/],
      [() => limiter.hit('a\ud800', '1/second'), ratelock.InvalidArgumentError, /`key`.*surrogate/],
      [() => limiter.peek('\udfffb', '1/second'), ratelock.InvalidArgumentError, /`key`.*surrogate/],
      [() => limiter.reset('a\ud800', '1/second'), ratelock.InvalidArgumentError, /`key`.*surrogate/],
      [() => limiter.reset('k', 'ten per fortnight'), ratelock.InvalidRuleError, /fortnight|ten/],
      [() => limiter.hit('k'.repeat(65537), '1/second'), ratelock.InvalidArgumentError, /`key`.*65536/],
      [() => limiter.peek(Buffer.alloc(65537), '1/second'), ratelock.InvalidArgumentError, /`key`.*65536/],
      [() => limiter.hit('k', '9'.repeat(1 << 20)), ratelock.InvalidRuleError, /^.{0,400}$/s],
      [() => limiter.hit(10n ** 5000n, '1/second'), ratelock.InvalidArgumentError, /^.{0,400}$/s],
    ]
    assert.ok((await limiter.hit(`${fresh()}\ud83d\ude00`, '1/second')).allowed, 'a surrogate pair is text')
    assert.ok((await limiter.hit(fresh() + 'k'.repeat(65_000), '1/second')).allowed, 'up to 64 KiB')
    for (const [call, Class, message] of bad) {
      await assert.rejects(call(), (error) => {
        assert.ok(error instanceof Class, `${error.name}: ${error.message}`)
        assert.ok(error instanceof ratelock.RatelockError)
        assert.match(error.code, /^ERR_RATELOCK_/)
        assert.match(error.message, message)
        return true
      })
    }
  })
}

test('bad options are named at construction', () => {
  assert.throws(() => new ratelock.Limiter({ timeoutMs: 'soon' }), /`timeoutMs`/)
  assert.throws(() => new ratelock.Limiter('redis://x'), ratelock.InvalidArgumentError)
})

test('invalid option values are named on first use', async () => {
  await assert.rejects(new ratelock.Limiter({ onError: 'maybe' }).hit('k', '1/s'), ratelock.InvalidArgumentError)
  await assert.rejects(new ratelock.Limiter({ timeoutMs: -1 }).hit('k', '1/s'), /`timeoutMs`/)
  await assert.rejects(new ratelock.Limiter({ url: 'http://localhost' }).hit('k', '1/s'), /url/)
  const huge = 'x'.repeat(1 << 20)
  for (const options of [{ clock: huge }, { onError: huge }, { url: huge }, { defaultAlgorithm: huge }]) {
    await assert.rejects(new ratelock.Limiter(options).hit('k', '1/s'), (error) => {
      assert.ok(error instanceof ratelock.RatelockError, error.message.slice(0, 100))
      assert.ok(error.message.length < 400, `a ${error.message.length}-character message`)
      return true
    })
  }
})

test('an unreachable Redis rejects with StoreUnavailableError, and a later call tries again', async () => {
  const limiter = new ratelock.Limiter({ url: 'redis://127.0.0.1:1/', timeoutMs: 300 })
  await assert.rejects(limiter.hit('k', '1/second'), ratelock.StoreUnavailableError)
  await assert.rejects(limiter.hit('k', '1/second'), ratelock.StoreUnavailableError)
})

test('a stalled server gives StoreTimeoutError; onError allow/deny answer degraded decisions', async () => {
  const server = await RedisServer.start()
  try {
    const raising = new ratelock.Limiter({ url: server.url, timeoutMs: 200 })
    const allowing = new ratelock.Limiter({ url: server.url, timeoutMs: 200, onError: 'allow', prefix: 'a' })
    const denying = new ratelock.Limiter({ url: server.url, timeoutMs: 200, onError: 'deny', prefix: 'd' })
    for (const limiter of [raising, allowing, denying]) await limiter.hit(fresh(), '5/second')
    const sleeping = server.command('DEBUG', 'SLEEP', '0.8')
    await new Promise((resolve) => setTimeout(resolve, 50))
    await assert.rejects(raising.hit(fresh(), '5/second'), (error) => {
      assert.ok(error instanceof ratelock.StoreTimeoutError, error.name)
      assert.ok(error instanceof ratelock.StoreUnavailableError)
      assert.equal(error.code, 'ERR_RATELOCK_TIMEOUT')
      return true
    })
    const [allowed, denied] = await Promise.all([allowing.hit(fresh(), '5/second'), denying.hit(fresh(), '5/second')])
    assert.deepEqual([allowed.allowed, allowed.degraded, denied.allowed, denied.degraded], [true, true, false, true])
    await sleeping
  } finally {
    await server.close()
  }
})

test('the store clock decides by default and nowMs replaces it', async () => {
  const limiter = new ratelock.Limiter({ url: redis.url })
  const key = fresh()
  const base = Date.UTC(2026, 0, 1)
  assert.ok((await limiter.hit(key, '1/minute', { nowMs: base })).allowed)
  const later = await limiter.peek(key, '1/minute', { nowMs: base + 30_000 })
  assert.equal(later.retryAfterMs, 30_000)
})

test('the exported bounds are the ones enforced', async () => {
  const limiter = new ratelock.Limiter()
  assert.equal(ratelock.MAX_KEY_BYTES, 65536)
  assert.ok((await limiter.hit(Buffer.alloc(ratelock.MAX_KEY_BYTES, 107), '5/second')).allowed)
  await assert.rejects(limiter.hit(Buffer.alloc(ratelock.MAX_KEY_BYTES + 1, 107), '5/second'), ratelock.InvalidArgumentError)
  const rules = (count) => Array.from({ length: count }, (_, n) => `${n + 1}/second`).join('; ')
  assert.ok((await limiter.hit('many', rules(ratelock.MAX_RULES))).allowed)
  await assert.rejects(limiter.hit('many', rules(ratelock.MAX_RULES + 1)), ratelock.InvalidRuleError)
})

test('a URL parameter its scheme does not take is named, whatever onError says', async () => {
  for (const [url, unknown] of [
    ['redis://127.0.0.1:1/?sever_code=lua', 'sever_code'],
    ['redis+cluster://127.0.0.1:1,127.0.0.1:2?protocol=resp3', 'protocol'],
  ]) {
    const limiter = new ratelock.Limiter({ url, onError: 'allow' })
    await assert.rejects(limiter.hit('k', '1/second'), (error) => error instanceof ratelock.InvalidArgumentError && error.message.includes(`\`${unknown}\``))
  }
})


test('hitSync and peekSync answer at once on the memory store, sharing state with hit', async () => {
  const limiter = new ratelock.Limiter()
  const key = `sync:${randomUUID()}`
  const first = limiter.hitSync(key, '2/minute')
  assert.ok(!(first instanceof Promise), 'a decision, not a promise')
  assert.deepEqual([first.allowed, first.remaining, first.rule], [true, 1, '2/minute'])
  const peeked = limiter.peekSync(key, '2/minute')
  assert.deepEqual([peeked.allowed, peeked.remaining], [true, 0], 'what a hit would answer')
  assert.equal((await limiter.hit(key, '2/minute')).remaining, 0, 'peekSync spent nothing; hit sees what hitSync spent')
  const denied = limiter.hitSync(key, '2/minute', { cost: 1 })
  assert.equal(denied.allowed, false)
  assert.ok(denied.retryAfterMs > 29_000)
  // A limiter whose first call is async, then sync, and one made elsewhere: one memory store.
  const other = new ratelock.Limiter()
  assert.equal(other.hitSync(key, '2/minute').allowed, false)
  assert.equal(other.hitSync(Buffer.from(key), '2/minute').allowed, false, 'a Buffer key is the same key as its text')
  assert.equal(limiter.hitSync(key, '2/minute', { nowMs: Date.now() + 120_000 }).allowed, true, 'nowMs is the clock')
})

test('a memory call reads a key whole at any length: multi-byte text where the addon switches buffers, long keys, Buffers', () => {
  const limiter = new ratelock.Limiter()
  const base = `long:${randomUUID()}:`
  // Around 256 bytes of UTF-8 (where a key read on the stack ends) and far past it, with characters
  // of 2, 3 and 4 bytes straddling the end.
  for (const length of [240, 248, 250, 251, 252, 253, 254, 255, 256, 257, 260, 300, 5000]) {
    for (const wide of ['é', '€', '😀']) {
      const prefix = base + 'a'.repeat(Math.max(0, length - Buffer.byteLength(base)))
      const key = prefix + wide + 'z'
      assert.equal(limiter.hitSync(key, '1/minute').allowed, true, `${length} ${wide}: the first hit`)
      assert.equal(limiter.hitSync(Buffer.from(key), '1/minute').allowed, false, `${length} ${wide}: the same key as a Buffer`)
      assert.equal(limiter.peekSync(prefix, '1/minute').allowed, true, `${length} ${wide}: not a key cut short`)
      assert.equal(limiter.peekSync(prefix + wide, '1/minute').allowed, true, `${length} ${wide}: not a key missing its end`)
    }
  }
})

test('hitSync names what is wrong: bad input, and a store that does I/O', () => {
  const limiter = new ratelock.Limiter()
  assert.throws(() => limiter.hitSync('k', 'nonsense'), ratelock.InvalidRuleError)
  assert.throws(() => limiter.hitSync('k', '1/second', { cost: 2 }), ratelock.CostExceedsCapacityError)
  assert.throws(() => limiter.hitSync(42, '1/second'), /`key`/)
  assert.throws(() => limiter.peekSync('k', '1/second', { cost: 'two' }), /`cost`/)
  const remote = new ratelock.Limiter({ url: redis.url })
  assert.throws(() => remote.hitSync('k', '1/second'), (error) => {
    assert.ok(error instanceof ratelock.ConfigurationError)
    assert.match(error.message, /memory store.*use hit/)
    return true
  })
})

test('on the memory store, every limiter call settles without waiting for the event loop', async () => {
  const limiter = new ratelock.Limiter()
  const key = `settle:${randomUUID()}`
  await limiter.hit(key, '10/minute')
  // Awaiting each call takes microtasks only: a callback queued for the loop's next turn has not run.
  let turned = false
  setImmediate(() => {
    turned = true
  })
  await limiter.hit(key, '10/minute')
  await limiter.refund(key, '10/minute')
  assert.equal((await limiter.reserve(key, '10/minute using token_bucket', { maxWaitMs: 1000 })).allowed, true)
  await limiter.setOverride(key, '20/minute', { ttlMs: 60_000 })
  assert.equal(await limiter.clearOverride(key), true)
  await limiter.block(key, 1000)
  assert.equal((await limiter.peek(key, '10/minute')).reason, 'ban')
  await limiter.unblock(key)
  await limiter.deny(key, 1000)
  assert.equal(await limiter.clear(key), true)
  await limiter.reset(key, '10/minute')
  assert.equal(turned, false)
})
