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

const { DistributedLock, Limiter, StoreUnavailableError } = require('../../bindings-node')
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
 * A TLS front for `redis` (its plain port) on a free loopback port: its first connection finishes the
 * handshake, reads what the client writes first (the preamble) and closes without a word, as a proxy
 * going down between two clients would; later ones are passed through. Answers the front, the CA that
 * signed its certificate for localhost, and how many connections it took.
 */
async function frontClosingItsFirstConnection() {
  const dir = makeCertificates('DNS:localhost')
  const read = (name) => fs.readFileSync(path.join(dir, name), 'utf8')
  const caPem = read('ca.pem')
  const sockets = new Set()
  const front = tls.createServer({ key: read('key.pem'), cert: read('cert.pem') }, (socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    front.connections += 1
    if (front.connections === 1) {
      socket.once('data', () => socket.end())
      return
    }
    const back = net.connect(redis.port, '127.0.0.1')
    sockets.add(back)
    back.on('error', () => socket.destroy())
    socket.on('close', () => back.destroy())
    socket.pipe(back).pipe(socket)
  })
  fs.rmSync(dir, { recursive: true, force: true })
  front.connections = 0
  front.stop = () => {
    for (const socket of sockets) socket.destroy()
    return new Promise((resolve) => front.close(resolve))
  }
  await new Promise((resolve) => front.listen(0, '127.0.0.1', resolve))
  return { front, caPem }
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
    assert.equal(front.connections, 2, 'the closed connection, then a fresh one')
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
