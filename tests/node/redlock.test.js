'use strict'
// DistributedLock on Redlock (redlock:// over 3 independent redis-servers) from Node: one holder with
// rising tokens, still granted with one server stopped, StoreUnavailableError with two stopped.

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { after, before, test } = require('node:test')

const ratelock = require('../../bindings-node')
const { RedisServer } = require('./redis-server')

let servers
before(async () => {
  servers = await Promise.all([RedisServer.start(), RedisServer.start(), RedisServer.start()])
})
after(() => Promise.all(servers.map((server) => server.close())))

const urlOf = () => `redlock://${servers.map((server) => `127.0.0.1:${server.port}`).join(',')}`

test('one holder at a time over three servers, then a majority outage is a typed error', async () => {
  const name = `redlock:${randomUUID()}`
  let inside = 0
  let most = 0
  const tokens = []
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      const lock = new ratelock.DistributedLock(name, { url: urlOf(), ttlMs: 5000, timeoutMs: 300 })
      for (let i = 0; i < 5; i++) {
        await lock.using(async () => {
          inside += 1
          most = Math.max(most, inside)
          tokens.push(lock.fencingToken)
          await new Promise((resolve) => setTimeout(resolve, 2))
          inside -= 1
        }, { timeoutMs: 10_000 })
      }
    }),
  )
  assert.equal(most, 1)
  assert.equal(new Set(tokens).size, 20)

  await servers[0].stop()
  const lock = new ratelock.DistributedLock(name, { url: urlOf(), ttlMs: 5000, timeoutMs: 300 })
  assert.equal(await lock.tryAcquire(), true, 'two of three servers are a majority')
  await lock.release()
  await servers[1].stop()
  await assert.rejects(lock.tryAcquire(), (error) => {
    assert.ok(error instanceof ratelock.StoreUnavailableError, `${error.name}: ${error.message}`)
    assert.match(error.message, /1 of 3 servers answered/)
    return true
  })
  // The same URL and timeout share the store made above (a new one could not reach a majority now).
  await assert.rejects(new ratelock.Limiter({ url: urlOf(), timeoutMs: 300 }).hit('k', '1/second'), /locks only/)
})
