'use strict'
// Every Node adapter (Express, Fastify, Koa, Hono on @hono/node-server) in its real server, driven over
// real HTTP against a real redis-server: 3×200 then a 429 whose headers parse as structured fields,
// rules, costs and keys from the request, unusable keys, client keys (a spoofed X-Forwarded-For ignored,
// trusted proxies, IPv6 /56, IPv4-mapped), and the store down under each failure policy.

const assert = require('node:assert/strict')
const net = require('node:net')
const { after, before, test } = require('node:test')
const { randomUUID } = require('node:crypto')
const { parseList } = require('structured-headers')

const { Limiter } = require('../../bindings-node')
const { HttpLimiter: Http, headerPairs, scopedKey } = require('../../bindings-node/http')

const { FRAMEWORKS, COUNTED_RULES, serve } = require('./adapter-apps')
const { RedisServer } = require('./redis-server')

process.env.RATELOCK_QUIET = '1'

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

/** A port nothing listens on: a store that is down. */
function deadPort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

async function with_(framework, settings, use, host) {
  const app = await serve(framework, { url: redis.url, ...settings }, host)
  try {
    return await use((path, headers) => fetch(`${app.base}${path}`, { headers }))
  } finally {
    await app.close()
  }
}

const statuses = async (get, paths) => {
  const out = []
  for (const [path, headers] of paths) out.push((await get(path, headers)).status)
  return out
}

for (const framework of FRAMEWORKS) {
  test(`${framework}: 3 allowed, then a 429 whose headers parse as structured fields`, () =>
    with_(framework, {}, async (get) => {
      const replies = []
      for (let i = 0; i < 4; i++) replies.push(await get('/search'))
      assert.deepEqual(replies.map((r) => r.status), [200, 200, 200, 429])
      replies.forEach((reply, i) => {
        const [[name, parameters]] = parseList(reply.headers.get('ratelimit'))
        assert.equal(name, '3/hour')
        assert.equal(parameters.get('r'), [2, 1, 0, 0][i])
        const policies = parseList(reply.headers.get('ratelimit-policy'))
        assert.deepEqual(policies.map(([n, p]) => [n, p.get('q'), p.get('w')]), [['3/hour', 3, 3600]])
      })
      const denied = replies[3]
      assert.equal(denied.headers.get('retry-after'), '1200')
      assert.match(denied.headers.get('content-type'), /^text\/plain/)
      assert.equal(await denied.text(), 'Too many requests: over the limit of 3/hour; retry in 1200 s.\n')
    }))

  test(`${framework}: rules, costs, keys and skips from the request`, () =>
    with_(framework, {}, async (get) => {
      assert.deepEqual(await statuses(get, Array(3).fill(['/tenant?plan=free'])), [200, 200, 429])
      assert.deepEqual(await statuses(get, Array(6).fill(['/tenant?plan=pro'])), [200, 200, 200, 200, 200, 429])
      assert.deepEqual(await statuses(get, [['/cost?n=7'], ['/cost?n=4'], ['/cost?n=3']]), [200, 429, 200])
      const keyless = await get('/key')
      assert.equal(keyless.status, 400)
      assert.equal(await keyless.text(), 'The request has no usable rate-limit key.\n')
      assert.equal((await get(`/key?k=${'x'.repeat(66_000)}`)).status >= 400, true, 'too long for a key or for the server')
      assert.equal((await get('/key?k=ann')).status, 200)
      const skipped = await get('/skip')
      assert.equal(skipped.status, 200)
      assert.equal(skipped.headers.get('ratelimit'), null)
      assert.deepEqual(await (await get('/decision')).json(), { remaining: 49, degraded: false })
    }))

  test(`${framework}: a spoofed X-Forwarded-For is ignored unless the proxy is trusted`, async () => {
    await with_(framework, {}, async (get) => {
      const forged = [0, 1, 2, 3].map((n) => ['/search', { 'x-forwarded-for': `198.51.100.${n}` }])
      assert.deepEqual(await statuses(get, forged), [200, 200, 200, 429], 'every forged address is still the one peer')
    })
    await with_(framework, { trustedProxies: 1 }, async (get) => {
      const distinct = [0, 1, 2, 3].map((n) => ['/search', { 'x-forwarded-for': `6.6.6.6, 198.51.100.${n}` }])
      assert.deepEqual(await statuses(get, distinct), [200, 200, 200, 200])
      const same56 = ['2001:db8:1:100::1', '2001:db8:1:1ff::2', '2001:db8:1:180:ffff::3', '2001:db8:1:1aa::4']
      assert.deepEqual(await statuses(get, same56.map((a) => ['/search', { 'x-forwarded-for': a }])), [200, 200, 200, 429])
      assert.equal((await get('/search', { 'x-forwarded-for': '2001:db8:1:200::1' })).status, 200, 'the next /56')
      const folded = ['203.0.113.9', '::ffff:203.0.113.9', '::ffff:cb00:7109', '203.0.113.9']
      assert.deepEqual(await statuses(get, folded.map((a) => ['/search', { 'x-forwarded-for': a }])), [200, 200, 200, 429])
    })
  })

  test(`${framework}: the store down follows the failure policy`, async () => {
    const down = `redis://127.0.0.1:${await deadPort()}/`
    await with_(framework, { url: down, deniedBody: 'json' }, async (get) => {
      const unavailable = await get('/search')
      assert.equal(unavailable.status, 503)
      assert.equal(unavailable.headers.get('retry-after'), '1')
      assert.deepEqual(await unavailable.json(), { error: 'store_unavailable' })
    })
    await with_(framework, { url: down, onError: 'allow' }, async (get) => {
      assert.equal((await get('/search')).status, 200)
      assert.deepEqual(await (await get('/decision')).json(), { remaining: 0, degraded: true })
    })
    await with_(framework, { url: down, onError: 'deny' }, async (get) => {
      const refused = await get('/search')
      assert.equal(refused.status, 429)
      assert.equal(await refused.text(), 'Too many requests; retry in 1 s.\n')
    })
  })
}

test('express: an IPv4-mapped peer (a dual-stack server) shares the key of its IPv4 address', async () => {
  const prefix = `mapped${Date.now()}`
  const dual = await serve('express', { url: redis.url, prefix }, '::')
  const plain = await serve('express', { url: redis.url, prefix }, '127.0.0.1')
  try {
    const seen = []
    for (const app of [dual, plain, dual, plain]) seen.push((await fetch(`${app.base}/search`)).status)
    assert.deepEqual(seen, [200, 200, 200, 429])
  } finally {
    await dual.close()
    await plain.close()
  }
})

test('hono: an allowed response whose headers cannot change (one passed on from fetch) keeps its status and gets the headers', async () => {
  const http = require('node:http')
  const { Hono } = require('hono')
  const { getRequestListener } = require('@hono/node-server')
  const { rateLimit } = require('../../bindings-node/hono')
  const listen = async (server) => {
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${server.address().port}`
  }
  const upstream = http.createServer((request, response) => response.writeHead(201).end('from upstream'))
  const upstreamUrl = await listen(upstream)
  const app = new Hono()
  app.use(rateLimit({ rules: '5/minute', getPeer: () => '127.0.0.1' }))
  app.get('/passed-on', () => fetch(upstreamUrl))
  const server = http.createServer(getRequestListener(app.fetch))
  const base = await listen(server)
  try {
    const response = await fetch(`${base}/passed-on`)
    assert.equal(response.status, 201, 'setting the headers of an immutable response threw: a 500')
    assert.equal(await response.text(), 'from upstream')
    assert.ok(response.headers.get('ratelimit'), 'the RateLimit header is there')
  } finally {
    await new Promise((resolve) => server.close(resolve))
    await new Promise((resolve) => upstream.close(resolve))
  }
})

test("fastify: allowList matches the key the limit counts on (the client's address as the trusted proxies say)", async () => {
  // Behind a trusted local proxy Fastify's request.ip is the proxy's address: listing it let every
  // client through, whatever X-Forwarded-For said. Only the listed client itself passes uncounted.
  const Fastify = require('fastify')
  const app = Fastify()
  await app.register(require('ratelock/fastify'), { rules: '2/minute', trustedProxies: ['loopback'], allowList: ['127.0.0.1'] })
  app.get('/', async () => 'ok')
  await app.listen({ port: 0, host: '127.0.0.1' })
  try {
    const base = `http://127.0.0.1:${app.server.address().port}/`
    const from = async (client) => (await fetch(base, { headers: client ? { 'x-forwarded-for': client } : {} })).status
    const forwarded = []
    for (let i = 0; i < 3; i++) forwarded.push(await from('6.6.6.6'))
    assert.deepEqual(forwarded, [200, 200, 429], 'a forwarded client is counted')
    const listed = []
    for (let i = 0; i < 3; i++) listed.push(await from(null))
    assert.deepEqual(listed, [200, 200, 200], 'the listed address itself is not')
  } finally {
    await app.close()
  }
})

test("fastify: a route's own keyGenerator is the key its allowList is matched on", async () => {
  const Fastify = require('fastify')
  const app = Fastify()
  await app.register(require('ratelock/fastify'), { rules: '2/minute', global: false, allowList: ['vip'] })
  const perUser = { rules: '2/minute', keyGenerator: (request) => String(request.headers['x-user']) }
  app.get('/r', { config: { rateLimit: perUser } }, async () => 'ok')
  await app.listen({ port: 0, host: '127.0.0.1' })
  try {
    const base = `http://127.0.0.1:${app.server.address().port}/r`
    const as = async (user) => (await fetch(base, { headers: { 'x-user': user } })).status
    const vip = []
    for (let i = 0; i < 3; i++) vip.push(await as('vip'))
    assert.deepEqual(vip, [200, 200, 200], 'the listed user passes uncounted')
    const bob = []
    for (let i = 0; i < 3; i++) bob.push(await as('bob'))
    assert.deepEqual(bob, [200, 200, 429])
  } finally {
    await app.close()
  }
})

test('fastify: onExceeding and onExceeded hear of each counted request with its key, a route\'s in place of the plugin\'s', async () => {
  // @fastify/rate-limit's callbacks: an app written for it logs or bans a client from onExceeded.
  const Fastify = require('fastify')
  const app = Fastify()
  const heard = []
  await app.register(require('ratelock/fastify'), {
    rules: '2/minute',
    onExceeding: (request, key) => heard.push(`plugin exceeding ${request.url} ${key}`),
    onExceeded: async (request, key) => heard.push(`plugin exceeded ${request.url} ${key}`),
  })
  const route = { rules: '1/minute', keyGenerator: (request) => String(request.headers['x-user']), onExceeded: (request, key) => heard.push(`route exceeded ${key}`) }
  const quiet = { rules: '1/minute', onExceeding: null, onExceeded: null }
  app.get('/', async () => 'ok')
  app.get('/own', { config: { rateLimit: route } }, async () => 'ok')
  app.get('/quiet', { config: { rateLimit: quiet } }, async () => 'ok')
  await app.listen({ port: 0, host: '127.0.0.1' })
  try {
    const base = `http://127.0.0.1:${app.server.address().port}`
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${base}/`)).status)
    for (let i = 0; i < 2; i++) statuses.push((await fetch(`${base}/own`, { headers: { 'x-user': 'bob' } })).status)
    // Fastify's HEAD route beside /quiet counts with its GET: one bucket, as every adapter counts them.
    statuses.push((await fetch(`${base}/quiet`, { method: 'HEAD' })).status, (await fetch(`${base}/quiet`)).status)
    assert.deepEqual(statuses, [200, 200, 429, 200, 429, 200, 429])
    assert.deepEqual(heard, [
      'plugin exceeding / 127.0.0.1',
      'plugin exceeding / 127.0.0.1',
      'plugin exceeded / 127.0.0.1',
      'plugin exceeding /own bob',
      'route exceeded bob',
    ])
  } finally {
    await app.close()
  }
  await assert.rejects(require('ratelock/fastify')({ addHook() {} }, { onExceeded: 'log' }), /onExceeded.*expected a function/)
})

test("every adapter refuses an option it does not take, naming it (a peer's windowMs would be ignored)", async () => {
  const ratelock = require('../../bindings-node')
  const { rateLimit } = require('../../bindings-node/express')
  const koa = require('../../bindings-node/koa')
  const hono = require('../../bindings-node/hono')
  const { HttpLimiter } = require('../../bindings-node/http')
  const fastify = require('../../bindings-node/fastify')
  const refused = (field) => (error) => {
    assert.ok(error instanceof ratelock.InvalidArgumentError, String(error))
    assert.match(error.message, new RegExp(`has no option "${field}"`))
    return true
  }
  assert.throws(() => rateLimit({ windowMs: 60_000, max: 100 }), refused('windowMs'))
  // A peer's option says what takes its place.
  assert.throws(() => rateLimit({ windowMs: 60_000, max: 100 }), /instead: rules: '100\/15 minutes'/)
  assert.throws(() => koa.rateLimit({ max: 100, duration: 60_000 }), /has no option "max"; write the limit/)
  assert.throws(() => hono.rateLimit({ standardHeader: true }), /the option is standardHeaders/)
  assert.throws(() => koa.rateLimit({ rules: '5/minute', handler: () => {} }), refused('handler'))
  assert.throws(() => hono.rateLimit({ rules: '5/minute', standardHeader: true }), refused('standardHeader'))
  assert.throws(() => new HttpLimiter({ rules: '5/minute' }), refused('rules'))
  assert.throws(() => new HttpLimiter().limit({ rules: '5/minute', max: 5 }), refused('max'))
  await assert.rejects(fastify({ addHook() {}, decorateRequest() {} }, { timeWindow: 60_000 }), refused('timeWindow'))
  // Each adapter's own options pass, and a Limiter's for the one it makes.
  rateLimit({ rules: '5/minute', handler: () => {}, message: 'slow down', requestPropertyName: 'limit', shadow: true })
  koa.rateLimit({ rules: '5/minute', message: 'slow down', requestPropertyName: 'limit', denyCache: 100 })
  hono.rateLimit({ rules: '5/minute', getPeer: () => '127.0.0.1', clock: 'local' })
  await fastify({ addHook() {}, decorateRequest() {} }, {
    rules: '5/minute', global: true, hook: 'preHandler', allowList: [], errorResponseBuilder: () => ({}), requestPropertyName: 'limit', logLevel: 'warn',
  })
  // A Limiter's options reach the limiter an HttpLimiter makes (they were dropped without a word).
  const shadowing = new HttpLimiter({ shadow: true })
  await shadowing.limiter.hit('shadowed', '1/minute')
  const second = await shadowing.limiter.hit('shadowed', '1/minute')
  assert.ok(second.allowed && second.wouldDeny, 'the shadow option reached the limiter')
})

for (const framework of FRAMEWORKS) {
  test(`${framework}: skipSuccessfulRequests counts only failed requests, skipFailedRequests only successful ones`, async () => {
    const prefix = `n${randomUUID().slice(0, 10)}`
    const peer = new Limiter({ url: redis.url, prefix })
    // A given-back request is refunded once its response is sent: wait (bounded) until the store counts
    // `spent` of the limit's two units (a peek answers what one more request would leave).
    const settlesAt = async (scope, spent) => {
      const key = scopedKey(scope, '127.0.0.1')
      const counts = (peeked) => (!peeked.allowed ? 2 : 1 - peeked.remaining)
      let seen
      for (const started = Date.now(); Date.now() - started < 3000; await new Promise((r) => setTimeout(r, 5))) {
        seen = counts(await peer.peek(key, COUNTED_RULES))
        if (seen === spent) return
      }
      assert.equal(seen, spent, `${scope}: the units counted once the responses were sent`)
    }
    await with_(framework, { prefix }, async (get) => {
      // A failed login counts; a successful one gives back its own unit, and only its own.
      assert.equal((await get('/login')).status, 401)
      for (let i = 0; i < 3; i++) {
        assert.equal((await get('/login?ok=1')).status, 200)
        await settlesAt('login', 1)
      }
      assert.deepEqual(await statuses(get, [['/login'], ['/login'], ['/login?ok=1']]), [401, 429, 429])
      // Failed uploads are given back; successful ones count.
      for (let i = 0; i < 3; i++) {
        assert.equal((await get('/upload')).status, 500)
        await settlesAt('upload', 0)
      }
      assert.deepEqual(await statuses(get, [['/upload?ok=1'], ['/upload?ok=1'], ['/upload?ok=1']]), [200, 200, 429])
    })
  })
}

test('only what the rules spent is given back: nothing for a shadowed, allow-listed or degraded request', async () => {
  const { HttpLimiter } = require('../../bindings-node/http')
  // Each case on a client of its own (the memory store is the process's).
  const counted = async (http, rules, peer) => {
    const limit = http.limit({ rules, skipSuccessfulRequests: true })
    return (await http.check(limit, [], peer, null)).counted
  }
  const shadowing = new HttpLimiter({ shadow: true })
  assert.notEqual(await counted(shadowing, '1/hour', '192.0.2.1'), null, 'spent: may be given back')
  assert.equal(await counted(shadowing, '1/hour', '192.0.2.1'), null, 'let through in shadow: spent nothing')
  const enforcing = new HttpLimiter()
  assert.notEqual(await counted(enforcing, '1/hour shadow; 10/hour', '192.0.2.2'), null)
  assert.equal(await counted(enforcing, '1/hour shadow; 10/hour', '192.0.2.2'), null, 'the shadow rule that would deny took nothing')
  await enforcing.limiter.allow('default:192.0.2.3', 60_000)
  assert.equal(await counted(enforcing, '1/hour', '192.0.2.3'), null, 'an allow-listed request spent nothing')
  const down = new HttpLimiter({ url: `redis://127.0.0.1:${await deadPort()}`, onError: 'allow', timeoutMs: 300 })
  assert.equal(await counted(down, '1/hour', '192.0.2.4'), null, 'a degraded answer spent nothing')
})

test('a limit refuses counting options of the wrong kind, naming them', () => {
  const http = new (require('../../bindings-node/http').HttpLimiter)()
  assert.throws(() => http.limit({ rules: '1/minute', skipFailedRequests: 'yes' }), /skipFailedRequests/)
  assert.throws(() => http.limit({ rules: '1/minute', requestWasSuccessful: true }), /requestWasSuccessful/)
})

/** Serves a Node request listener on a free loopback port for the length of `use(base)`. */
async function servingListener(listener, use) {
  const http = require('node:http')
  const server = http.createServer(listener)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    return await use(`http://127.0.0.1:${server.address().port}`)
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}

test('koa: a request is settled on the response sent, after an upstream middleware handled the error', async () => {
  // The handler throws; a middleware in front answers 418, which this limit counts as a success: the
  // response sent decides, not the error the chain threw.
  const Koa = require('koa')
  const { rateLimit } = require('../../bindings-node/koa')
  const app = new Koa()
  app.use(async (ctx, next) => {
    try {
      await next()
    } catch {
      ctx.status = 418
      ctx.body = 'handled'
    }
  })
  app.use(rateLimit({
    rules: '1/hour',
    prefix: `k${randomUUID().slice(0, 8)}`,
    skipSuccessfulRequests: true,
    requestWasSuccessful: (ctx) => ctx.status === 418,
  }))
  app.use(() => {
    throw new Error('the handler failed')
  })
  await servingListener(app.callback(), async (base) => {
    const seen = []
    for (let i = 0; i < 3; i++) {
      seen.push((await fetch(base)).status)
      await new Promise((r) => setTimeout(r, 100)) // the refund follows the response
    }
    assert.deepEqual(seen, [418, 418, 418], 'each handled failure was a success given back')
  })
})

test('hono: a handler that throws what is not an Error is settled as failed', async () => {
  const { Hono } = require('hono')
  const { getRequestListener } = require('@hono/node-server')
  const { rateLimit } = require('../../bindings-node/hono')
  const app = new Hono()
  app.use(rateLimit({ rules: '1/hour', prefix: `h${randomUUID().slice(0, 8)}`, skipFailedRequests: true, getPeer: () => '127.0.0.1' }))
  app.get('/', () => {
    throw 'not an Error' // eslint-disable-line no-throw-literal
  })
  const listener = getRequestListener(app.fetch, { errorHandler: () => new Response('failed', { status: 500 }) })
  await servingListener(listener, async (base) => {
    const seen = []
    for (let i = 0; i < 3; i++) {
      seen.push((await fetch(base)).status)
      await new Promise((r) => setTimeout(r, 100))
    }
    assert.ok(!seen.includes(429), `every failure was given back: ${seen}`)
  })
})

test('express: a client gone while the store was asked is settled as failed', async () => {
  const express = require('express')
  const { Limiter } = require('../../bindings-node')
  const { rateLimit } = require('../../bindings-node/express')
  let gone = () => {}
  const left = new Promise((resolve) => (gone = resolve))
  const limiter = new Limiter({ prefix: `x${randomUUID().slice(0, 8)}` })
  const app = express()
  const limit = rateLimit({
    limiter,
    rules: '1/hour',
    skipFailedRequests: true,
    // The key comes only once the client has left: the response ended before the limit was checked.
    keyGenerator: async (_req, res) => {
      await new Promise((resolve) => res.once('close', resolve)).then(gone)
      return 'client'
    },
  })
  app.get('/', limit, (_req, res) => res.status(201).send('made'))
  await servingListener(app, async (base) => {
    const leaving = new AbortController()
    const request = fetch(base, { signal: leaving.signal }).catch((error) => error.name)
    await new Promise((r) => setTimeout(r, 100))
    leaving.abort()
    assert.equal(await request, 'AbortError')
    await left
    await new Promise((r) => setTimeout(r, 300)) // its hit, then its refund
    assert.ok((await limiter.peek('default:client', '1/hour')).allowed, 'the request whose client left was given back')
  })
})

test("koa: throw refuses through ctx.throw, so the app's error middleware answers, with the refusal's headers", async () => {
  // koa-ratelimit's `throw`: apps that answer every error in one middleware expect the 429 as an error.
  const Koa = require('koa')
  const { rateLimit } = require('../../bindings-node/koa')
  const app = new Koa()
  const caught = []
  app.use(async (ctx, next) => {
    try {
      await next()
    } catch (error) {
      caught.push(`${error.status} ${error.message}`)
      throw error
    }
  })
  app.use(rateLimit({ rules: '1/hour', prefix: `k${randomUUID().slice(0, 8)}`, throw: true, message: 'slow down' }))
  app.use((ctx) => {
    ctx.body = 'ok'
  })
  app.silent = true
  await servingListener(app.callback(), async (base) => {
    assert.equal((await fetch(base)).status, 200)
    const refused = await fetch(base)
    assert.equal(refused.status, 429)
    assert.equal(await refused.text(), 'slow down')
    assert.ok(Number(refused.headers.get('retry-after')) >= 1, 'Koa set the error\'s headers')
    assert.match(refused.headers.get('ratelimit') ?? '', /^"1\/hour";r=0/)
  })
  assert.deepEqual(caught, ['429 slow down'])
  // An outage is no limit's refusal: its 503 is answered as without `throw`, with the core's body.
  const down = new Koa()
  down.use(rateLimit({ rules: '1/hour', url: `redis://127.0.0.1:${await deadPort()}`, timeoutMs: 300, throw: true }))
  down.use((ctx) => {
    ctx.body = 'ok'
  })
  await servingListener(down.callback(), async (base) => {
    const refused = await fetch(base)
    assert.equal(refused.status, 503)
    assert.notEqual(await refused.text(), 'Service Unavailable', 'the core\'s body, not a thrown 5xx\'s')
  })
  assert.throws(() => rateLimit({ rules: '1/hour', throw: 'yes' }), /throw.*expected true or false/)
})

test("hono: handler answers a refusal (hono-rate-limiter's name), its response carrying the refusal's headers", async () => {
  const { Hono } = require('hono')
  const { getRequestListener } = require('@hono/node-server')
  const { rateLimit } = require('../../bindings-node/hono')
  const app = new Hono()
  const handler = (c, _next, { decision }) => c.json({ wait: Math.ceil(decision.retryAfterMs / 1000) }, 503)
  const prefix = `h${randomUUID().slice(0, 8)}`
  app.use('/json', rateLimit({ rules: '1/hour', prefix, scope: 'json', getPeer: () => '127.0.0.1', handler }))
  // A handler written for the peer: the status is on c, or in the options it is given.
  app.use('/text', rateLimit({ rules: '1/hour', prefix, scope: 'text', getPeer: () => '127.0.0.1', handler: (c) => c.text('slow down') }))
  app.use('/own', rateLimit({ rules: '1/hour', prefix, scope: 'own', getPeer: () => '127.0.0.1', handler: (_c, _next, o) => new Response('own', { status: o.statusCode }) }))
  app.get('*', (c) => c.text('ok'))
  await servingListener(getRequestListener(app.fetch), async (base) => {
    assert.equal((await fetch(`${base}/json`)).status, 200)
    const refused = await fetch(`${base}/json`)
    assert.equal(refused.status, 503)
    assert.ok((await refused.json()).wait > 3000)
    assert.ok(Number(refused.headers.get('retry-after')) > 3000)
    assert.match(refused.headers.get('ratelimit') ?? '', /^"1\/hour";r=0/)
    for (const path of ['/text', '/own']) {
      assert.equal((await fetch(`${base}${path}`)).status, 200)
      const answered = await fetch(`${base}${path}`)
      assert.equal(answered.status, 429, path)
      assert.ok(Number(answered.headers.get('retry-after')) > 3000, path)
    }
  })
  assert.throws(() => rateLimit({ rules: '1/hour', handler: 'text' }), /handler.*expected a function/)
})

test("the headers name a key's override, not the rule's own limit", async () => {
  // The deciding rule's figures crossed to the core without its limit: limit=100 beside remaining=999
  // under a 1000/minute override.
  const http = new Http({ legacyHeaders: true })
  const limit = http.limit({ rules: '100/minute', scope: 'override', keyGenerator: () => 'tenant' })
  await http.limiter.setOverride(scopedKey('override', 'tenant'), '1000/minute')
  const { answer, decision } = await http.check(limit, [{}], '127.0.0.1', null)
  assert.equal(decision.limit, 1000)
  const headers = Object.fromEntries(headerPairs(answer))
  assert.equal(headers['X-RateLimit-Limit'], '1000', JSON.stringify(answer.headers))
  assert.equal(headers['X-RateLimit-Remaining'], '999')
})
