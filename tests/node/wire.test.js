'use strict'
// Limiter calls on a plain redis:// server go over a socket on the JavaScript thread (lib/wire-socket.js):
// pipelined replies reach the right calls, a timed-out call's late reply is dropped in order, NOSCRIPT
// loads the script once, AUTH and SELECT come from the URL, and a lost server gives typed errors (or
// the onError answer) until the next call finds it back. Real redis-server only.

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

const fresh = () => `wire:${randomUUID()}`
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Calls `attempt` until it resolves (up to 10 s), for what a restarted server needs to come back. */
async function eventually(attempt) {
  const deadline = Date.now() + 10_000
  for (;;) {
    try {
      return await attempt()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await sleep(50)
    }
  }
}

/** Whether `error` is a StoreUnavailableError (StoreTimeoutError is one). */
function unavailable(error) {
  assert.ok(error instanceof ratelock.StoreUnavailableError, `${error.name}: ${error.message}`)
  assert.match(error.code, /^ERR_RATELOCK_(STORE_UNAVAILABLE|TIMEOUT)$/)
  return true
}

test('thousands of pipelined calls on many keys each get their own answer', async () => {
  // A test of answers, not of time: a generous timeout, so a loaded machine cannot fail it (about 3,000
  // calls in flight at once, the first ones behind the connection's setup).
  const limiter = new ratelock.Limiter({ url: redis.url, timeoutMs: 10_000 })
  // Key i has limit 5 + i, so every decision says which key's rule it answers.
  const keys = Array.from({ length: 40 }, (_, i) => ({ key: fresh(), limit: 5 + i }))
  const calls = []
  for (let round = 0; round < 3; round++) {
    for (const { key, limit } of keys) {
      for (let n = 0; n < limit; n++) calls.push({ key, limit, peek: (n + round) % 7 === 0 })
    }
  }
  calls.sort(() => Math.random() - 0.5)
  const decisions = await Promise.all(
    calls.map(({ key, limit, peek }) =>
      peek ? limiter.peek(key, `${limit}/hour`) : limiter.hit(key, `${limit}/hour`),
    ),
  )
  for (const [i, { limit }] of calls.entries()) assert.equal(decisions[i].limit, limit, `call ${i}`)
  for (const { key, limit } of keys) {
    const admitted = calls.filter((call, i) => call.key === key && !call.peek && decisions[i].allowed).length
    assert.equal(admitted, limit, `key with limit ${limit}`)
    assert.equal((await limiter.peek(key, `${limit}/hour`)).remaining, 0)
  }
})

test('a call past its timeout is a StoreTimeoutError; its late reply goes to no other call', async () => {
  const server = await RedisServer.start()
  try {
    const limiter = new ratelock.Limiter({ url: server.url, timeoutMs: 200 })
    const [slow, next] = [fresh(), fresh()]
    assert.ok((await limiter.hit(slow, '3/minute')).allowed)
    const sleeping = server.command('DEBUG', 'SLEEP', '0.6')
    await sleep(50)
    const late = limiter.hit(slow, '3/minute')
    await assert.rejects(late, (error) => {
      assert.ok(error instanceof ratelock.StoreTimeoutError, error.name)
      assert.equal(error.code, 'ERR_RATELOCK_TIMEOUT')
      return true
    })
    await sleeping
    // The timeout opened the store's breaker and gave the connection up. A call after the breaker's
    // pause starts its background probe (and is refused), which closes it once the server answers
    // (under load, later than the sleep's own reply): the next call goes out then on a fresh
    // connection, at most 3 s on.
    const waking = Date.now()
    let answer = null
    while (answer === null && Date.now() - waking < 3000) {
      answer = await limiter.hit(next, '7/minute').catch((error) => {
        assert.ok(error instanceof ratelock.StoreUnavailableError, String(error))
        return sleep(20).then(() => null)
      })
    }
    assert.ok(answer !== null, 'no call went through within 3 s of the server waking')
    assert.deepEqual([answer.limit, answer.remaining], [7, 6], 'the late reply was not handed to this call')
    // The timed-out hit ran and was not sent again: two of three are spent, so a third hit would
    // leave none (peek answers what a hit would).
    const third = await limiter.peek(slow, '3/minute')
    assert.deepEqual([third.allowed, third.remaining], [true, 0])
  } finally {
    await server.close()
  }
})

test('a JavaScript thread blocked past the timeout is no outage: replies that came meanwhile settle first', async () => {
  // Node runs timers before it reads sockets: the call's timer timed out a hit whose reply was waiting
  // in the socket, opened the store's breaker (the next call was refused) and gave the connection up.
  const limiter = new ratelock.Limiter({ url: redis.url, timeoutMs: 300 })
  const key = fresh()
  assert.ok((await limiter.hit(key, '10/minute')).allowed)
  const pending = limiter.hit(key, '10/minute')
  await new Promise((resolve) => process.nextTick(resolve)) // the hit is written
  const until = Date.now() + 500
  while (Date.now() < until); // a long synchronous task
  const decision = await pending
  assert.deepEqual([decision.allowed, decision.degraded, decision.remaining], [true, false, 8])
  assert.equal(limiter.breakerState, 'closed')
  assert.equal((await limiter.hit(key, '10/minute')).remaining, 7)
})

test('a timeoutMs past what Node timers take (2^31 ms) still serves calls', async () => {
  // A longer delay fires at once in Node: every call failed as "connecting timed out".
  const limiter = new ratelock.Limiter({ url: redis.url, timeoutMs: 3e9 })
  assert.equal((await limiter.hit(fresh(), '10/minute')).remaining, 9)
})

test('SCRIPT FLUSH between calls: the script is loaded again and nothing is counted twice', async () => {
  const limiter = new ratelock.Limiter({ url: redis.url })
  const key = fresh()
  assert.equal((await limiter.hit(key, '100/hour')).remaining, 99)
  await redis.command('SCRIPT', 'FLUSH')
  assert.equal((await limiter.hit(key, '100/hour')).remaining, 98)
  await redis.command('SCRIPT', 'FLUSH')
  const burst = await Promise.all(Array.from({ length: 150 }, () => limiter.hit(key, '100/hour')))
  assert.equal(burst.filter((d) => d.allowed).length, 98)
  assert.equal((await limiter.peek(key, '100/hour')).remaining, 0)
})

test('a SCRIPT LOAD the ACL denies: the call raises a ConfigurationError naming it, whatever onError says', async () => {
  const server = await RedisServer.start()
  try {
    // Allowed to run scripts, not to load them; the script is not loaded on this fresh server.
    const acl = ['ACL', 'SETUSER', 'noload', 'on', '>pw', '~*', '&*', '+@all', '-script|load']
    assert.equal(await server.command(...acl), 'OK')
    const url = `redis://noload:pw@127.0.0.1:${server.port}/?server_code=scripts`
    const limiter = new ratelock.Limiter({ url, onError: 'allow' })
    await assert.rejects(limiter.hit(fresh(), '5/minute'), (error) => {
      assert.ok(error instanceof ratelock.ConfigurationError, `${error.name}: ${error.message}`)
      assert.match(error.message, /NOPERM|script\|load/)
      return true
    })
  } finally {
    await server.close()
  }
})

test('a URL with a password and a db number: AUTH and SELECT on every new connection', async () => {
  const server = await RedisServer.start({ password: 's3cret/:@' })
  try {
    const url = server.url.replace(/\/$/, '/3')
    const limiter = new ratelock.Limiter({ url, prefix: 'wiredb' })
    const key = fresh()
    assert.equal((await limiter.hit(key, '5/minute')).remaining, 4)
    assert.match(await server.command('-n', '3', 'KEYS', 'wiredb:*'), /wiredb:/)
    assert.equal(await server.command('-n', '0', 'KEYS', 'wiredb:*'), '')

    // An ACL user in the URL.
    await server.command('ACL', 'SETUSER', 'app', 'on', '>apppw', '~*', '+@all')
    const asUser = new ratelock.Limiter({ url: `redis://app:apppw@127.0.0.1:${server.port}/3`, prefix: 'wiredb' })
    assert.equal((await asUser.hit(key, '5/minute')).remaining, 3)

    // The connection drops and the password changes: the next connection's AUTH fails, typed as a
    // configuration error (no onError policy covers it: a rotated password must not pass as an outage).
    await server.command('CLIENT', 'KILL', 'TYPE', 'normal')
    await server.command('CONFIG', 'SET', 'requirepass', 'other')
    let refusal = null
    for (let i = 0; i < 20 && refusal === null; i++) {
      await limiter.hit(key, '5/minute').then(
        () => assert.fail('a hit with the old password was answered'),
        (error) => {
          assert.ok(error instanceof ratelock.ConfigurationError, `${error.name}: ${error.message}`)
          if (/WRONGPASS/.test(error.message)) refusal = error
        },
      )
    }
    assert.ok(refusal, 'AUTH was refused with WRONGPASS')
  } finally {
    await server.close()
  }
})

test('a server stopped mid-stream: typed errors, then the same limiter recovers after a restart', async () => {
  const server = await RedisServer.start()
  try {
    const limiter = new ratelock.Limiter({ url: server.url, timeoutMs: 500 })
    await limiter.hit(fresh(), '10/second')
    const inFlight = Array.from({ length: 300 }, () => limiter.hit(fresh(), '10/second'))
    const stopping = server.stop()
    const settled = await Promise.allSettled(inFlight)
    await stopping
    for (const outcome of settled) {
      if (outcome.status === 'rejected') unavailable(outcome.reason)
      else assert.equal(outcome.value.allowed, true)
    }
    await assert.rejects(limiter.hit(fresh(), '10/second'), unavailable)
    await assert.rejects(limiter.peek(fresh(), '10/second'), unavailable)
    await server.restart()
    const key = fresh()
    const back = await eventually(() => limiter.hit(key, '10/second'))
    assert.deepEqual([back.allowed, back.degraded, back.remaining], [true, false, 9])
    const many = await Promise.all(Array.from({ length: 20 }, () => limiter.hit(key, '10/second')))
    assert.equal(many.filter((d) => d.allowed).length, 9)
  } finally {
    await server.close()
  }
})

test('onError allow and deny answer degraded decisions while the server is down', async () => {
  const server = await RedisServer.start()
  try {
    const allowing = new ratelock.Limiter({ url: server.url, onError: 'allow', timeoutMs: 300 })
    const denying = new ratelock.Limiter({ url: server.url, onError: 'deny', timeoutMs: 300 })
    for (const limiter of [allowing, denying]) assert.ok((await limiter.hit(fresh(), '5/second')).allowed)
    await server.stop()
    for (let i = 0; i < 3; i++) {
      const [allowed, denied] = await Promise.all([allowing.hit(fresh(), '5/second'), denying.hit(fresh(), '5/second')])
      assert.deepEqual([allowed.allowed, allowed.degraded, denied.allowed, denied.degraded], [true, true, false, true])
      assert.ok(denied.retryAfterMs > 0)
      assert.equal(allowed.rule, '5/second')
    }
    await server.restart()
    const back = await eventually(async () => {
      const decision = await allowing.hit(fresh(), '5/second')
      if (decision.degraded) throw new Error('still degraded')
      return decision
    })
    assert.equal(back.remaining, 4)
  } finally {
    await server.close()
  }
})
