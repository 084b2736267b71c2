'use strict'
// Connections the server closes (CLIENT KILL, an idle `timeout`, a TLS server closing before its first
// answer) fail no Limiter call (the wire path) and no lock call (the runtime's connection); a lock wait
// rides out killed connections within its budget; a release that fails on the transport keeps the hold,
// so it can be retried.

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const tls = require('node:tls')
const { after, before, test } = require('node:test')
const { setTimeout: sleep } = require('node:timers/promises')

const { DistributedLock, Limiter, StoreTimeoutError, StoreUnavailableError } = require('../../bindings-node')
const { RedisServer, makeCertificates } = require('./redis-server')

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

const killClients = (server) => server.command('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')

test('hits and locks fail nothing when the server kills their connections', async () => {
  const prefix = `k${randomUUID().slice(0, 8)}`
  const limiter = new Limiter({ url: redis.url, prefix })
  const lock = new DistributedLock(`${prefix}:lock`, { url: redis.url })
  const failed = []
  let admitted = 0
  for (let round = 0; round < 40; round++) {
    try {
      if ((await limiter.hit('k', '1000/day')).allowed) admitted++
    } catch (error) {
      failed.push(`hit ${round}: ${error.message}`)
    }
    try {
      await lock.using(() => {})
    } catch (error) {
      failed.push(`lock ${round}: ${error.message}`)
    }
    await killClients(redis)
    await sleep(5)
  }
  assert.deepEqual(failed, [])
  // A peek answers as if it spent its own cost.
  assert.equal(1000 - (await limiter.peek('k', '1000/day')).remaining - 1, admitted)
})

test('a server idle timeout fails no call', async () => {
  const server = await RedisServer.start({ extraArgs: ['--timeout', '1'] })
  try {
    const limiter = new Limiter({ url: server.url })
    for (let round = 0; round < 2; round++) {
      await sleep(2200)
      assert.equal((await limiter.hit('idle', '100/hour')).remaining, 99 - round)
    }
  } finally {
    await server.close()
  }
})

/**
 * A TLS front on a free loopback port with a certificate for localhost, handing each connection it takes
 * (its number from 1, and a function passing it through to `redis`'s plain port, which answers the back
 * connection) to `take`. Answers the front (`front.connections()`, `front.stop()`) and the CA that signed
 * its certificate.
 */
async function tlsFront(take) {
  const dir = makeCertificates('DNS:localhost')
  const read = (name) => fs.readFileSync(path.join(dir, name), 'utf8')
  const caPem = read('ca.pem')
  const sockets = new Set()
  let connections = 0
  const front = tls.createServer({ key: read('key.pem'), cert: read('cert.pem') }, (socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    const toRedis = () => {
      const back = net.connect(redis.port, '127.0.0.1')
      sockets.add(back)
      back.on('error', () => socket.destroy())
      socket.on('close', () => back.destroy())
      return back
    }
    take(socket, (connections += 1), toRedis)
  })
  fs.rmSync(dir, { recursive: true, force: true })
  front.connections = () => connections
  front.stop = () => {
    for (const socket of sockets) socket.destroy()
    return new Promise((resolve) => front.close(resolve))
  }
  await new Promise((resolve) => front.listen(0, '127.0.0.1', resolve))
  return { front, caPem }
}

/**
 * A TLS front whose first connection finishes the handshake, reads what the client writes first (the
 * preamble) and, `closeAfterMs` later, closes without a word, as a proxy going down between two clients
 * would; later ones are passed through to `redis`, or with `thenSilent` read and never answered.
 */
function frontClosingItsFirstConnection({ closeAfterMs = 0, thenSilent = false } = {}) {
  return tlsFront((socket, number, toRedis) => {
    if (number === 1) socket.once('data', () => setTimeout(() => socket.end(), closeAfterMs))
    else if (!thenSilent) socket.pipe(toRedis()).pipe(socket)
  })
}

test('a TLS server that closes before its first answer: the call it never got goes once to a fresh connection', async () => {
  // Over TLS the wire client writes its preamble alone and holds the calls until the server's first
  // answer (a refusal of the client comes as an alert after the handshake). A close then, for any
  // other reason, leaves those calls unwritten: they go to the next connection instead of failing.
  const { front, caPem } = await frontClosingItsFirstConnection()
  try {
    const limiter = new Limiter({ url: `rediss://localhost:${front.address().port}/`, tlsRootCa: caPem, onError: 'raise' })
    const decision = await limiter.hit(`early-${randomUUID().slice(0, 8)}`, '10/minute')
    assert.equal(decision.allowed, true)
    assert.equal(decision.degraded, false)
    assert.equal(decision.remaining, 9, 'counted once')
    assert.equal(front.connections(), 2, 'the closed connection, then a fresh one')
  } finally {
    await front.stop()
  }
})

/**
 * A plain front for `redis` on a free loopback port whose connections can go silent (`front.silence()`:
 * nothing passes either way, and nothing is closed), as when the path to a server dies without a FIN or
 * an RST (a failover moving its address, a NAT dropping the flow). Later connections pass.
 */
async function silenceableFront() {
  const pairs = []
  const front = net.createServer((socket) => {
    socket.on('error', () => {})
    const back = net.connect(redis.port, '127.0.0.1')
    back.on('error', () => socket.destroy())
    const pair = { socket, back, silent: false }
    pairs.push(pair)
    socket.on('data', (bytes) => pair.silent || back.write(bytes))
    back.on('data', (bytes) => pair.silent || socket.write(bytes))
    socket.on('close', () => back.destroy())
  })
  front.silence = () => pairs.forEach((pair) => (pair.silent = true))
  front.connections = () => pairs.length
  front.stop = () => {
    for (const { socket, back } of pairs) socket.destroy(), back.destroy()
    return new Promise((resolve) => front.close(resolve))
  }
  await new Promise((resolve) => front.listen(0, '127.0.0.1', resolve))
  return front
}

test('a call moved to a fresh connection keeps its own deadline', async () => {
  // Held behind the preamble, the call moves at 300 ms to a connection that never answers: it is
  // answered at its deadline (600 ms from its submission), not a whole timeout after the move.
  const { front, caPem } = await frontClosingItsFirstConnection({ closeAfterMs: 300, thenSilent: true })
  try {
    const limiter = new Limiter({ url: `rediss://localhost:${front.address().port}/`, tlsRootCa: caPem, timeoutMs: 600 })
    const started = performance.now()
    await assert.rejects(limiter.hit(`moved-${randomUUID().slice(0, 8)}`, '10/minute'), StoreTimeoutError)
    const took = performance.now() - started
    assert.ok(took < 850, `answered ${Math.round(took)} ms after its submission, against a 600 ms deadline`)
    assert.equal(front.connections(), 2)
  } finally {
    await front.stop()
  }
})

test('a connection gone silent is given up at its first timeout: the next calls go out on a fresh one', async () => {
  const front = await silenceableFront()
  try {
    const limiter = new Limiter({ url: `redis://127.0.0.1:${front.address().port}/`, timeoutMs: 200 })
    const key = `silent-${randomUUID().slice(0, 8)}`
    assert.equal((await limiter.hit(key, '1000/minute')).remaining, 999)
    front.silence()
    await assert.rejects(limiter.hit(key, '1000/minute'), StoreTimeoutError)
    // The breaker's pause after an outage (about the timeout), then calls on a fresh connection.
    const started = Date.now()
    let decision = null
    while (decision === null && Date.now() - started < 3000) {
      await sleep(50)
      decision = await limiter.hit(key, '1000/minute').catch(() => null)
    }
    assert.ok(decision !== null, 'no call succeeded within 3 s: the silent connection was kept')
    assert.equal(decision.degraded, false)
    assert.ok(front.connections() >= 2, 'a fresh connection')
  } finally {
    await front.stop()
  }
})

test('a TLS call held behind a slow first answer and answered at its timeout is never sent afterwards', async () => {
  // Over TLS the calls wait for the server's first answer; one whose deadline passes first is answered
  // by the policy, and must not then be written and run (a caller retrying would be counted twice).
  const { front, caPem } = await tlsFront((socket, _number, toRedis) => {
    const back = toRedis()
    back.pipe(socket)
    let first = true
    socket.on('data', (bytes) => {
      if (first) setTimeout(() => back.write(bytes), 600) // a slow first answer
      else back.write(bytes)
      first = false
    })
  })
  try {
    const key = `held-${randomUUID().slice(0, 8)}`
    const limiter = new Limiter({ url: `rediss://localhost:${front.address().port}/`, tlsRootCa: caPem, onError: 'allow', timeoutMs: 300 })
    const answered = await limiter.hit(key, '10/minute')
    assert.equal(answered.degraded, true, 'answered by the policy at its timeout')
    await sleep(900) // the first answer came at 600 ms
    const checker = new Limiter({ url: redis.url })
    // A peek answers as if it spent its own cost: 9 left of a key nothing was spent on.
    assert.equal((await checker.peek(key, '10/minute')).remaining, 9, 'the call answered at its timeout never ran')
  } finally {
    await front.stop()
  }
})

test('a lock wait rides out killed connections', async () => {
  const name = `waited-${randomUUID().slice(0, 8)}`
  const holder = new DistributedLock(name, { url: redis.url, ttlMs: 10000 })
  const waiter = new DistributedLock(name, { url: redis.url, ttlMs: 10000 })
  await holder.acquire()
  const waiting = waiter.acquire({ timeoutMs: 8000 })
  for (let i = 0; i < 10; i++) {
    await sleep(100)
    await killClients(redis)
  }
  await holder.release()
  assert.ok((await waiting) > 0, 'granted after the release, within its budget')
  await waiter.release()
})

test('a release that fails on the transport keeps the hold', async () => {
  const server = await RedisServer.start()
  const lock = new DistributedLock('kept', { url: server.url, timeoutMs: 300 })
  const token = await lock.acquire()
  await server.close()
  await assert.rejects(lock.release(), StoreUnavailableError)
  assert.equal(lock.fencingToken, token, 'the hold is still this instance’s')
  await assert.rejects(lock.release(), StoreUnavailableError)
  assert.equal(lock.fencingToken, token)
})
