'use strict'
// ratelock/express through real HTTP requests to an Express server: headers of every draft, the 429
// body and Retry-After, skip, a custom handler and message, key and cost functions, and a store that is
// down (503) with and without passOnStoreError. adapters.test.js runs what every adapter shares.

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { after, before, test } = require('node:test')
const express = require('express')

const { Limiter } = require('../../bindings-node')
const { rateLimit } = require('../../bindings-node/express')
const { RedisServer } = require('./redis-server')

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

/** Serves `app` on a free loopback port for the length of `use(base)`. */
async function serving(app, use) {
  const server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening))
  })
  try {
    return await use(`http://127.0.0.1:${server.address().port}`)
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}

function appWith(middleware) {
  const app = express()
  app.get('/item', middleware, (req, res) => res.json({ ok: true, remaining: req.rateLimit?.remaining ?? null }))
  app.use((error, _req, res, _next) => res.status(500).json({ error: error.name, code: error.code }))
  return app
}

for (const store of ['memory', 'redis']) {
  test(`${store}: allowed requests carry the latest draft's and legacy headers; the rejection is a 429`, async () => {
    const url = store === 'redis' ? redis.url : undefined
    const app = appWith(rateLimit({ url, prefix: `e${randomUUID().slice(0, 8)}`, rules: '2 per 10 seconds', legacyHeaders: true }))
    await serving(app, async (base) => {
      const first = await fetch(`${base}/item`)
      assert.equal(first.status, 200)
      assert.deepEqual(await first.json(), { ok: true, remaining: 1 })
      assert.equal(first.headers.get('ratelimit-policy'), '"2 per 10 seconds";q=2;w=10')
      assert.equal(first.headers.get('ratelimit'), '"2 per 10 seconds";r=1;t=5')
      assert.equal(first.headers.get('x-ratelimit-limit'), '2')
      assert.equal(first.headers.get('x-ratelimit-remaining'), '1')
      const reset = Number(first.headers.get('x-ratelimit-reset'))
      assert.ok(Math.abs(reset - (Date.now() / 1000 + 5)) <= 2, `X-RateLimit-Reset ${reset} is Unix seconds`)
      await fetch(`${base}/item`)
      const third = await fetch(`${base}/item`)
      assert.equal(third.status, 429)
      assert.equal(await third.text(), 'Too many requests: over the limit of 2 per 10 seconds; retry in 5 s.\n')
      assert.equal(third.headers.get('retry-after'), '5')
      assert.equal(third.headers.get('ratelimit'), '"2 per 10 seconds";r=0;t=5')
    })
  })
}

test('draft-6, draft-7 and draft-8 header sets, and none', async () => {
  const expectations = {
    'draft-6': { 'ratelimit-policy': '5;w=60', 'ratelimit-limit': '5', 'ratelimit-remaining': '4', 'ratelimit-reset': '12' },
    'draft-7': { 'ratelimit-policy': '5;w=60', ratelimit: 'limit=5, remaining=4, reset=12' },
    'draft-8': { 'ratelimit-policy': '"5/minute";q=5;w=60', ratelimit: '"5/minute";r=4;t=12' },
  }
  for (const [draft, expected] of Object.entries(expectations)) {
    const app = appWith(rateLimit({ rules: '5/minute', standardHeaders: draft, legacyHeaders: false, keyGenerator: () => randomUUID() }))
    await serving(app, async (base) => {
      const response = await fetch(`${base}/item`)
      for (const [name, value] of Object.entries(expected)) assert.equal(response.headers.get(name), value, `${draft} ${name}`)
      assert.equal(response.headers.get('x-ratelimit-limit'), null)
    })
  }
  const bare = appWith(rateLimit({ rules: '5/minute', standardHeaders: false, legacyHeaders: false, keyGenerator: () => randomUUID() }))
  await serving(bare, async (base) => {
    const response = await fetch(`${base}/item`)
    assert.equal(response.headers.get('ratelimit'), null)
    assert.equal(response.headers.get('ratelimit-policy'), null)
  })
})

test('skip, keyGenerator, cost, rules as a function, a custom handler and message', async () => {
  const limiter = new Limiter({ prefix: `e${randomUUID().slice(0, 8)}` })
  const middleware = rateLimit({
    limiter,
    rules: (req) => (req.query.plan === 'pro' ? '10/minute' : '3/minute'),
    keyGenerator: (req) => `user:${req.query.user}`,
    cost: (req) => Number(req.query.cost ?? 1),
    skip: (req) => req.query.user === 'admin',
    handler: (req, res, _next, { answer, decision }) =>
      res.status(answer.status).json({ slowDown: req.query.user, retryAfterMs: decision.retryAfterMs }),
  })
  await serving(appWith(middleware), async (base) => {
    assert.equal((await fetch(`${base}/item?user=ann&cost=3`)).status, 200)
    const over = await fetch(`${base}/item?user=ann`)
    assert.equal(over.status, 429)
    const body = await over.json()
    assert.equal(body.slowDown, 'ann')
    assert.ok(body.retryAfterMs > 0)
    assert.equal((await fetch(`${base}/item?user=bob`)).status, 200, 'another key')
    assert.equal((await fetch(`${base}/item?user=ann&plan=pro`)).status, 200, 'another rule, another limit')
    for (let i = 0; i < 5; i++) {
      const skipped = await fetch(`${base}/item?user=admin`)
      assert.equal(skipped.status, 200)
      assert.equal(skipped.headers.get('ratelimit'), null, 'skipped requests are not counted')
    }
  })
})

test('a custom message replaces the body, not the status or headers', async () => {
  const middleware = rateLimit({ rules: '1/minute', message: (req) => ({ busy: req.query.who }), keyGenerator: () => 'one' })
  await serving(appWith(middleware), async (base) => {
    await fetch(`${base}/item`)
    const refused = await fetch(`${base}/item?who=ann`)
    assert.equal(refused.status, 429)
    assert.equal(refused.headers.get('retry-after'), '60')
    assert.deepEqual(await refused.json(), { busy: 'ann' })
  })
})

test('a store that is down: 503 by default, a pass with passOnStoreError', async () => {
  const server = await RedisServer.start()
  const failing = rateLimit({ url: server.url, timeoutMs: 300, rules: '5/second' })
  const passing = rateLimit({ url: server.url, timeoutMs: 300, rules: '5/second', passOnStoreError: true })
  try {
    await serving(appWith(failing), async (base) => assert.equal((await fetch(`${base}/item`)).status, 200))
    await serving(appWith(passing), async (base) => assert.equal((await fetch(`${base}/item`)).status, 200))
    await server.stop()
    await serving(appWith(failing), async (base) => {
      const response = await fetch(`${base}/item`)
      assert.equal(response.status, 503)
      assert.equal(response.headers.get('retry-after'), '1')
    })
    await serving(appWith(passing), async (base) => {
      const response = await fetch(`${base}/item`)
      assert.equal(response.status, 200)
      assert.equal(response.headers.get('ratelimit'), null)
    })
  } finally {
    await server.close()
  }
})

test('bad middleware options are named', () => {
  assert.throws(() => rateLimit({ standardHeaders: 'draft-9' }), /`standardHeaders`/)
  assert.throws(() => rateLimit({ keyGenerator: 'ip' }), /`keyGenerator`/)
  assert.throws(() => rateLimit(null), /`options`/)
  assert.throws(() => rateLimit({ deniedBody: 'html' }), /`deniedBody`/)
  assert.throws(() => rateLimit({ trustedProxies: ['10.0.0.0/99'] }), /`trustedProxies`/)
  assert.throws(() => rateLimit({ rules: '5/fortnight' }), /fortnight/)
  assert.throws(() => rateLimit({ limiter: {}, passOnStoreError: true }), /`passOnStoreError`/)
})

test('requestWasSuccessful decides what failed, and a response the client left before it was sent failed', async () => {
  const limiter = new Limiter({ url: redis.url, prefix: `e${randomUUID().slice(0, 8)}` })
  // Only 201s succeed here; failures are given back, so only 201s count.
  const limit = rateLimit({
    limiter,
    rules: '1/hour',
    skipFailedRequests: true,
    requestWasSuccessful: (_req, res) => res.statusCode === 201,
  })
  const app = express()
  app.get('/ok', limit, (_req, res) => res.status(200).send('counted only as a failure'))
  let handlerStarted = () => {}
  app.get('/slow', limit, (_req, res) => {
    handlerStarted()
    const answer = setTimeout(() => res.status(201).send('made'), 400)
    res.once('close', () => clearTimeout(answer))
  })
  // Given back once its response is sent (or the client is gone): wait, bounded, until the store says so.
  const givenBack = async () => {
    let peeked
    for (const started = Date.now(); Date.now() - started < 3000; await new Promise((r) => setTimeout(r, 5))) {
      peeked = await limiter.peek('default:127.0.0.1', '1/hour')
      if (peeked.allowed) return
    }
    assert.ok(peeked.allowed, 'the request was given back')
  }
  await serving(app, async (base) => {
    assert.equal((await fetch(`${base}/ok`)).status, 200)
    await givenBack()
    const leaving = new AbortController()
    const started = new Promise((resolve) => (handlerStarted = resolve))
    const left = fetch(`${base}/slow`, { signal: leaving.signal }).catch((error) => error.name)
    await started
    leaving.abort()
    assert.equal(await left, 'AbortError')
    await givenBack()
    assert.equal((await fetch(`${base}/slow`)).status, 201)
    assert.equal((await fetch(`${base}/ok`)).status, 429)
  })
})
