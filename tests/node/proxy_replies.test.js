'use strict'
// A proxy's error replies in Node (the test kit's `answering_proxy` answers every script call), on the
// wire path and the runtime path alike: the listed outage replies of twemproxy and Envoy follow the
// failure policy; a code nobody knows rejects with ProtocolError even under onError 'allow'; a MOVED from
// a Cluster node is a ConfigurationError naming redis+cluster://.

const assert = require('node:assert/strict')
const { execFileSync, spawn } = require('node:child_process')
const path = require('node:path')
const readline = require('node:readline')
const { after, before, test } = require('node:test')

const { FairLock, Limiter, ProtocolError, ConfigurationError } = require('../../bindings-node')
const { RedisServer } = require('./redis-server')

const REPO = path.join(__dirname, '..', '..')
const OUTAGES = ['-ERR Connection refused', '-ERR Connection timed out', '-no upstream host', '-upstream failure']

let redis
let binary
const proxies = []
before(async () => {
  redis = await RedisServer.start()
  execFileSync('cargo', ['build', '--quiet', '-p', 'ratelock-testkit', '--bin', 'answering_proxy'], { cwd: REPO, stdio: 'inherit' })
  const meta = JSON.parse(execFileSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: REPO }))
  binary = path.join(meta.target_directory, 'debug', 'answering_proxy')
})
after(async () => {
  for (const proxy of proxies) proxy.stdin.end()
  await redis.close()
})

async function answering(reply, argument = '') {
  const proxy = spawn(binary, [String(redis.port), reply, argument])
  proxies.push(proxy)
  const lines = readline.createInterface({ input: proxy.stdout })[Symbol.asyncIterator]()
  return `redis://127.0.0.1:${(await lines.next()).value.split(' ')[1]}/`
}

for (const reply of OUTAGES) {
  test(`${reply}: an outage, answered by the failure policy`, async () => {
    const decision = await new Limiter({ url: await answering(reply), onError: 'allow' }).hit('k', '5/second')
    assert.ok(decision.allowed && decision.degraded)
  })
}

for (const reply of ['-NEWCODE never seen', '-ERR upstream failure while decoding']) {
  test(`${reply}: a protocol error whatever the policy`, async () => {
    const limiter = new Limiter({ url: await answering(reply), onError: 'allow' })
    await assert.rejects(limiter.hit('k', '5/second'), ProtocolError)
  })
}

test('MOVED on a plain URL: a configuration error naming redis+cluster://', async () => {
  const limiter = new Limiter({ url: await answering('-MOVED 3999 127.0.0.1:6381'), onError: 'allow' })
  await assert.rejects(limiter.hit('k', '5/second'), (error) => error instanceof ConfigurationError && /redis\+cluster:\/\//.test(error.message))
})

test('an unreadable reply stream: every call rejects with ProtocolError, none is admitted unsent', async () => {
  const limiter = new Limiter({ url: await answering('!!!garbage'), onError: 'allow' })
  const outcomes = []
  for (let i = 0; i < 6; i++) {
    try {
      const decision = await limiter.hit('k', '5/second')
      outcomes.push(decision.degraded ? 'degraded' : 'decided')
    } catch (error) {
      outcomes.push(error instanceof ProtocolError ? 'ProtocolError' : error.constructor.name)
    }
  }
  assert.deepEqual(outcomes, Array(6).fill('ProtocolError'))
})

test('a renewal refused for good loses the hold at once and says why', async () => {
  // The proxy answers only the fair lock's `extend`: the first renewal (at a third of the ttl) is refused.
  const lock = new FairLock('renewal-refused', { url: await answering('-NEWCODE never seen', 'extend'), ttlMs: 3000 })
  const hold = await lock.acquire({ timeoutMs: 1000 })
  const lost = await Promise.race([hold.hold.waitLost(), new Promise((resolve) => setTimeout(() => resolve('late'), 2500))])
  assert.equal(lost, true)
  assert.equal(hold.lostReason, 'failed')
  assert.ok(hold.lostError instanceof ProtocolError, String(hold.lostError))
})

test('a crossed reply on a live connection is a protocol error on every later call', async () => {
  // The proxy answers every call after the first with the first call's reply: well formed, another call's.
  const limiter = new Limiter({ url: await answering('REPLAY'), onError: 'allow' })
  const outcomes = []
  for (let i = 0; i < 5; i++) {
    try {
      outcomes.push((await limiter.hit('k', '5/second')).degraded ? 'degraded' : 'decided')
    } catch (error) {
      outcomes.push(error instanceof ProtocolError ? 'ProtocolError' : error.constructor.name)
    }
  }
  assert.deepEqual(outcomes, ['decided', ...Array(4).fill('ProtocolError')])
})
