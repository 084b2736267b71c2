'use strict'
// The store options every kind takes beside `url`: `tlsRootCa` (a private CA for `rediss://`, against a
// real TLS redis-server whose certificate that CA signed), a client certificate (`tlsClientCert`,
// `tlsClientKey`) and the memory store's bound (`maxKeys`, `whenFull`), with what a full store answers
// under each failure policy.

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { after, before, test } = require('node:test')

const ratelock = require('../../bindings-node')
const { WireClient } = require('../../bindings-node/lib/wire-socket')
const { RedisServer } = require('./redis-server')

let redis
before(async () => {
  redis = await RedisServer.startWithTls()
})
after(() => redis.close())

const fresh = () => `node:${randomUUID()}`

test('rediss:// with tlsRootCa: limits and locks work over TLS on a private CA, as a string or a Buffer', async () => {
  // A limiter's calls go over a TLS socket on this thread (the wire client), not through the runtime.
  const opened = []
  const open = WireClient.open
  WireClient.open = (...args) => {
    const client = open(...args)
    opened.push(client !== null)
    return client
  }
  const limiter = new ratelock.Limiter({ url: redis.tlsUrl, tlsRootCa: redis.caPem })
  const key = fresh()
  try {
    assert.equal((await limiter.hit(key, '2/minute')).remaining, 1)
  } finally {
    WireClient.open = open
  }
  assert.deepEqual(opened, [true])
  // The same key through the plain port: one server, one limit.
  assert.equal((await new ratelock.Limiter({ url: redis.url }).hit(key, '2/minute')).remaining, 0)

  const lock = new ratelock.DistributedLock(fresh(), { url: redis.tlsUrl, tlsRootCa: Buffer.from(redis.caPem), autoRenew: false })
  assert.ok((await lock.acquire({ timeoutMs: 1000 })) > 0)
  assert.equal(await lock.isLocked(), true)
  assert.equal(await lock.release(), 'released')
})

for (const protocols of [undefined, 'TLSv1.2']) {
  test(`a server that asks for a client certificate (tls-auth-clients yes) is a ConfigurationError whatever onError says${protocols ? `, over ${protocols} only` : ''}`, async () => {
  // Redis's default with TLS: a store given no client certificate is refused by the server's alert on
  // every connection alike; `allow` must not admit on it as on an outage. Over TLS 1.2 the alert is a
  // handshake failure (Node's OpenSSL and the runtime's rustls alike).
  const asking = await RedisServer.startWithTls({ askClients: true, protocols })
  try {
    const refused = (promise, what) =>
      assert.rejects(promise, (error) => {
        assert.ok(error instanceof ratelock.ConfigurationError, `${what}: ${error}`)
        assert.match(error.message, /tls-auth-clients/, what)
        return true
      })
    for (const onError of ['raise', 'allow']) {
      // The limiter's own TLS socket (twice: the connection the alert closed, then a fresh one).
      const limiter = new ratelock.Limiter({ url: asking.tlsUrl, tlsRootCa: asking.caPem, onError })
      await refused(limiter.hit(fresh(), '2/minute'), `limiter, ${onError}`)
      await refused(limiter.hit(fresh(), '2/minute'), `limiter again, ${onError}`)
    }
    // A lock's call through the runtime (rustls).
    const lock = new ratelock.DistributedLock(fresh(), { url: asking.tlsUrl, tlsRootCa: asking.caPem })
    await refused(lock.tryAcquire(), 'lock')
    // Given a client certificate the server's CA signed, the limiter's socket and a lock's runtime
    // connection present it; the waiter's wake-up (the runtime's subscriber) comes over it too.
    const mutual = { url: asking.tlsUrl, tlsRootCa: asking.caPem, tlsClientCert: asking.clientCertPem, tlsClientKey: Buffer.from(asking.clientKeyPem) }
    const key = fresh()
    assert.equal((await new ratelock.Limiter(mutual).hit(key, '2/minute')).remaining, 1)
    const name = fresh()
    const holder = new ratelock.DistributedLock(name, { ...mutual, autoRenew: false })
    assert.ok((await holder.acquire({ timeoutMs: 1000 })) > 0)
    const waiter = new ratelock.DistributedLock(name, { ...mutual, autoRenew: false })
    const waited = waiter.acquire({ timeoutMs: 5000 })
    await new Promise((resolve) => setTimeout(resolve, 200))
    const released = Date.now()
    assert.equal(await holder.release(), 'released')
    assert.ok((await waited) > 0)
    assert.ok(Date.now() - released < 2000, 'the waiter was woken by the release')
    assert.equal(await waiter.release(), 'released')
  } finally {
    await asking.close()
  }
  })
}

test('tlsClientCert and tlsClientKey go together, read as PEM, and only with a rediss:// URL', async () => {
  const named = (name) => (error) => {
    assert.ok(error instanceof ratelock.InvalidArgumentError, String(error))
    assert.match(error.message, new RegExp(name))
    return true
  }
  const invalid = async (options, name) => {
    // Named before any connection, under any failure policy, for a limiter and a lock alike.
    await assert.rejects(new ratelock.Limiter({ ...options, onError: 'allow' }).hit(fresh(), '1/second'), named(name))
    await assert.rejects(new ratelock.DistributedLock(fresh(), options).tryAcquire(), named(name))
  }
  const { clientCertPem: certificate, clientKeyPem: key } = redis
  await invalid({ url: redis.tlsUrl, tlsClientCert: certificate }, 'tlsClientKey')
  await invalid({ url: redis.tlsUrl, tlsClientKey: key }, 'tlsClientCert')
  await invalid({ url: redis.tlsUrl, tlsClientCert: 'not a certificate', tlsClientKey: key }, 'tlsClientCert')
  await invalid({ url: redis.tlsUrl, tlsClientCert: certificate, tlsClientKey: 'not a key' }, 'tlsClientKey')
  await invalid({ url: redis.url, tlsClientCert: certificate, tlsClientKey: key }, 'tlsClientCert')
  // On a URL that reads no TLS option, that comes first, whatever the PEM holds.
  await invalid({ url: redis.url, tlsClientCert: 'not a certificate', tlsClientKey: 'not a key' }, 'tlsClientCert.*rediss://')
  await invalid({ url: redis.url, tlsRootCa: 'not a certificate' }, 'tlsRootCa.*rediss://')
  assert.throws(() => new ratelock.Limiter({ url: redis.tlsUrl, tlsClientCert: 42, tlsClientKey: key }), named('tlsClientCert'))
})

test('a certificate not trusted, or not naming the host, is a ConfigurationError whatever onError says', async () => {
  const refused = (promise, what) =>
    assert.rejects(promise, (error) => {
      assert.ok(error instanceof ratelock.ConfigurationError, `${what}: ${error}`)
      // The option to fix is named as Node spells it.
      assert.match(error.message, /tlsRootCa/, what)
      assert.doesNotMatch(error.message, /tls_root_ca/, what)
      return true
    })
  for (const onError of ['raise', 'allow']) {
    // The limiter's own TLS socket, then a lock's call through the runtime (rustls): the same answer.
    await refused(new ratelock.Limiter({ url: redis.tlsUrl, onError }).hit(fresh(), '2/minute'), `limiter, ${onError}`)
    // The certificate names localhost, not the address.
    const byAddress = `rediss://127.0.0.1:${redis.tlsPort}/`
    await refused(new ratelock.Limiter({ url: byAddress, tlsRootCa: redis.caPem, onError }).hit(fresh(), '2/minute'), `address, ${onError}`)
  }
  await refused(new ratelock.DistributedLock(fresh(), { url: redis.tlsUrl }).tryAcquire(), 'lock')
  // Verification stays on when the environment turns Node's default off.
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'
  try {
    await refused(new ratelock.Limiter({ url: redis.tlsUrl, onError: 'allow' }).hit(fresh(), '2/minute'), 'NODE_TLS_REJECT_UNAUTHORIZED=0')
  } finally {
    delete process.env.NODE_TLS_REJECT_UNAUTHORIZED
  }
})

test('rediss:// to a port that serves plain Redis says the TLS handshake got no answer, not only that it timed out', async () => {
  // redis-server reads a TLS hello on its plain port as the start of a command and waits for its end.
  const limiter = new ratelock.Limiter({ url: `rediss://localhost:${redis.port}/`, tlsRootCa: redis.caPem, timeoutMs: 300 })
  await assert.rejects(limiter.hit(fresh(), '2/minute'), (error) => {
    assert.ok(error instanceof ratelock.StoreUnavailableError, String(error))
    assert.match(error.message, /TCP connection opened but the TLS handshake got no answer \(does this port serve TLS\?\)/)
    return true
  })
})

test('every TLS connection trusting one CA shares one secure context (made once, not per connection)', async () => {
  const tls = require('node:tls')
  const connect = tls.connect
  const contexts = []
  tls.connect = (options, ...rest) => {
    contexts.push(options.secureContext)
    return connect.call(tls, options, ...rest)
  }
  try {
    // A CA text no other test used, so its context is made here.
    const tlsRootCa = `${redis.caPem}\n`
    for (let i = 0; i < 3; i++) {
      await new ratelock.Limiter({ url: redis.tlsUrl, tlsRootCa }).hit(fresh(), '2/minute')
    }
  } finally {
    tls.connect = connect
  }
  assert.equal(contexts.length, 3, 'three limiters, three connections')
  assert.ok(contexts[0] instanceof tls.SecureContext, 'a context made ahead of the connection')
  assert.ok(contexts.every((context) => context === contexts[0]), 'the same context each time')
})

test('a CA that holds no certificate is bad input, named before any connection', async () => {
  const named = (error) => error instanceof ratelock.InvalidArgumentError && /tlsRootCa/.test(error.message)
  const framed = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'
  for (const tlsRootCa of ['not a certificate', framed]) {
    await assert.rejects(new ratelock.DistributedLock(fresh(), { url: redis.tlsUrl, tlsRootCa }).tryAcquire(), named)
    await assert.rejects(new ratelock.Limiter({ url: redis.tlsUrl, tlsRootCa, onError: 'allow' }).hit(fresh(), '1/second'), named)
  }
})

test('tlsRootCa is refused where nothing would read it: any URL but rediss://', async () => {
  const named = (error) =>
    error instanceof ratelock.InvalidArgumentError && /tlsRootCa/.test(error.message) && /rediss:\/\//.test(error.message)
  for (const url of [redis.url, undefined]) {
    await assert.rejects(new ratelock.Limiter({ url, tlsRootCa: redis.caPem, onError: 'allow' }).hit(fresh(), '1/second'), named)
    await assert.rejects(new ratelock.DistributedLock(fresh(), { url, tlsRootCa: redis.caPem }).tryAcquire(), named)
  }
})

test('maxKeys bounds the memory store: a new key past it fails as an outage, which the failure policy answers', async () => {
  // The bound is spread over the store's 64 shards (64 keys: one each), so a few hundred new keys fill it.
  // Each bound makes a store of its own (equal options share one), so these keys meet only each other.
  const refusing = new ratelock.Limiter({ maxKeys: 64 })
  const served = []
  let refused = 0
  for (let i = 0; i < 300; i++) {
    const key = fresh()
    try {
      await refusing.hit(key, '10/minute')
      served.push(key)
    } catch (error) {
      assert.ok(error instanceof ratelock.StoreUnavailableError, String(error))
      assert.match(error.message, /memory store is full/)
      refused++
    }
  }
  assert.ok(served.length <= 64 && refused > 0, `${served.length} served, ${refused} refused`)
  // A key it holds is still served, and its limit is not forgotten.
  assert.equal((await refusing.hit(served[0], '10/minute')).remaining, 8)
  assert.equal(refusing.hitSync(served[0], '10/minute').remaining, 7)

  const allowing = new ratelock.Limiter({ maxKeys: 65, onError: 'allow' })
  const decisions = []
  for (let i = 0; i < 300; i++) decisions.push(await allowing.hit(fresh(), '10/minute'))
  assert.ok(decisions.every((decision) => decision.allowed))
  // 65 keys are two per shard: at most 128 kept.
  assert.ok(decisions.filter((decision) => decision.degraded).length >= 300 - 128)
})

test("whenFull: 'evict' keeps serving new keys past maxKeys", async () => {
  const limiter = new ratelock.Limiter({ maxKeys: 66, whenFull: 'evict' })
  for (let i = 0; i < 300; i++) {
    const decision = await limiter.hit(fresh(), '10/minute')
    assert.equal(decision.degraded, false)
    assert.equal(decision.remaining, 9)
  }
})

test('a request of more rules than a shard of the bound holds is a ConfigurationError naming maxKeys', async () => {
  // maxKeys 10 over 64 shards leaves one key per shard, and two rules keep two (evicting went on forever).
  for (const whenFull of ['evict', 'refuse']) {
    const limiter = new ratelock.Limiter({ maxKeys: 10, whenFull, onError: 'allow' })
    await assert.rejects(limiter.hit(fresh(), '1/second; 10/minute'), (error) => {
      assert.ok(error instanceof ratelock.ConfigurationError, String(error))
      assert.match(error.message, /raise maxKeys to at least 128/)
      return true
    })
    assert.throws(() => limiter.hitSync(fresh(), '1/second; 10/minute'), ratelock.ConfigurationError)
  }
})

test('bad store options are named', async () => {
  const named = (options, pattern) =>
    assert.rejects(new ratelock.Limiter(options).hit(fresh(), '1/second'), (error) => {
      assert.ok(error instanceof ratelock.InvalidArgumentError, String(error))
      assert.match(error.message, pattern)
      return true
    })
  await named({ maxKeys: 0 }, /maxKeys/)
  await named({ maxKeys: 2.5 }, /maxKeys/)
  await named({ whenFull: 'evict' }, /whenFull.*maxKeys/)
  await named({ maxKeys: 10, whenFull: 'drop' }, /whenFull/)
  assert.throws(() => new ratelock.Limiter({ tlsRootCa: 42 }), /tlsRootCa/)
  assert.throws(() => new ratelock.Semaphore('s', 2, { maxKeys: '10' }), /maxKeys/)
})
