'use strict'
// Connections the server closes (CLIENT KILL, an idle `timeout`) fail no Limiter call (the wire path)
// and no lock call (the runtime's connection); a lock wait rides out killed connections within its
// budget; a release that fails on the transport keeps the hold, so it can be retried.

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { after, before, test } = require('node:test')
const { setTimeout: sleep } = require('node:timers/promises')

const { DistributedLock, Limiter, StoreUnavailableError } = require('../../bindings-node')
const { RedisServer } = require('./redis-server')

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
