'use strict'
// Python and Node on one Redis: the same key and rule give one shared limit, the same lock name one
// holder, and fencing tokens keep rising across the two languages; a fair lock has one queue for both,
// and a read-write lock one set of readers and writers. The Python side is
// tests/cross_language/python_peer.py, run with the package installed in .venv (make python-env).

const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const path = require('node:path')
const readline = require('node:readline')
const { randomUUID } = require('node:crypto')
const { after, before, test } = require('node:test')

const ratelock = require('../../bindings-node')
const { RedisServer } = require('../node/redis-server')

const PYTHON = path.join(__dirname, '..', '..', '.venv', 'bin', 'python')

let redis
let python
before(async () => {
  redis = await RedisServer.start()
  python = new PythonPeer(redis.url)
})
after(async () => {
  python.close()
  await redis.close()
})

/** The Python process, asked one JSON command at a time. */
class PythonPeer {
  #child
  #answers

  constructor(url) {
    this.#child = spawn(PYTHON, [path.join(__dirname, 'python_peer.py'), url], { stdio: ['pipe', 'pipe', 'inherit'] })
    this.#answers = readline.createInterface({ input: this.#child.stdout })[Symbol.asyncIterator]()
  }

  async ask(command) {
    this.#child.stdin.write(`${JSON.stringify(command)}\n`)
    const { value, done } = await this.#answers.next()
    assert.ok(!done, 'the Python peer exited')
    const answer = JSON.parse(value)
    assert.equal(answer.error, undefined, `Python: ${answer.error}`)
    return answer
  }

  close() {
    this.#child.stdin.end()
  }
}

test('one key and rule: one limit, whichever language spends it', async () => {
  const key = `shared:${randomUUID()}`
  const limiter = new ratelock.Limiter({ url: redis.url })
  const rules = '5/minute; 100/hour using sliding_window'
  for (let i = 0; i < 3; i++) assert.ok((await python.ask({ op: 'hit', key, rules })).allowed)
  const fourth = await limiter.hit(key, rules)
  assert.deepEqual([fourth.allowed, fourth.remaining, fourth.rule], [true, 1, '5/minute'])
  assert.ok((await python.ask({ op: 'hit', key, rules })).allowed)
  assert.equal((await limiter.hit(key, rules)).allowed, false, 'Node sees what Python spent')
  const sixth = await python.ask({ op: 'hit', key, rules })
  assert.deepEqual([sixth.allowed, sixth.remaining], [false, 0], 'and Python what Node spent')
})

test('one key: one ban and one list entry, whichever language writes or reads them', async () => {
  const key = `entry:${randomUUID()}`
  const limiter = new ratelock.Limiter({ url: redis.url })
  // A rule's ban started by a Python hit is Node's ban too, and Node's unblock lifts it for Python.
  const rules = '1/minute block 10 minutes'
  assert.ok((await python.ask({ op: 'hit', key, rules })).allowed)
  assert.equal((await python.ask({ op: 'hit', key, rules })).reason, 'ban')
  const banned = await limiter.hit(key, rules)
  assert.deepEqual([banned.allowed, banned.reason], [false, 'ban'])
  assert.ok(banned.retryAfterMs > 599_000 && banned.retryAfterMs <= 600_000)
  assert.equal(await limiter.unblock(key), true)
  assert.equal((await python.ask({ op: 'unblock', key })).changed, false, 'Python finds it lifted')
  // Node's deny-list entry denies Python's hits; Python's clear takes it off for Node.
  await limiter.deny(key, 60_000)
  assert.equal((await python.ask({ op: 'hit', key, rules: '100/second' })).reason, 'deny_list')
  assert.equal((await python.ask({ op: 'clear', key })).changed, true)
  assert.equal((await limiter.hit(key, '100/second')).reason, 'rule')
  // A shadow rule reads the same in both languages.
  const trial = await python.ask({ op: 'hit', key, rules: '1/minute shadow' })
  assert.ok(trial.allowed)
  const again = await limiter.hit(key, '1/minute shadow')
  assert.deepEqual([again.allowed, again.wouldDeny], [true, true])
})

test('one key: one override, whichever language sets, reads or clears it', async () => {
  const key = `tenant:${randomUUID()}`
  const limiter = new ratelock.Limiter({ url: redis.url })
  const rules = '2/hour using fixed_window'
  // A plan Python raises applies to Node's next request, and the window's count carries over.
  assert.ok((await limiter.hit(key, rules)).allowed)
  await python.ask({ op: 'set_override', key, rules: '10/hour using fixed_window' })
  const raised = await limiter.hit(key, rules)
  assert.deepEqual([raised.allowed, raised.limit, raised.remaining], [true, 10, 8])
  assert.deepEqual((await python.ask({ op: 'hit', key, rules })).limit, 10)
  // Node takes it away: Python's next request meets the rule as given, 3 already spent of 2.
  assert.equal(await limiter.clearOverride(key), true)
  const lowered = await python.ask({ op: 'hit', key, rules })
  assert.deepEqual([lowered.allowed, lowered.limit], [false, 2])
  assert.equal((await python.ask({ op: 'clear_override', key })).changed, false, 'Python finds it gone')
  // And one Node sets is Python's too.
  await limiter.setOverride(key, '20/hour using fixed_window')
  assert.deepEqual((await python.ask({ op: 'hit', key, rules })).limit, 20)
})

test('one lock name: one holder across languages, tokens rising from one to the other', async () => {
  const name = `shared-lock:${randomUUID()}`
  const lock = new ratelock.DistributedLock(name, { url: redis.url, ttlMs: 10_000 })
  const held = await python.ask({ op: 'acquire', name })
  assert.equal(held.acquired, true)
  assert.equal(await lock.tryAcquire(), false, 'Node cannot take what Python holds')
  assert.equal(await lock.isLocked(), true)
  await python.ask({ op: 'release', name })
  const token = await lock.acquire({ timeoutMs: 2000 })
  assert.ok(token > held.token, `Node's token ${token} follows Python's ${held.token}`)
  assert.equal((await python.ask({ op: 'acquire', name })).acquired, false, 'Python cannot take what Node holds')
  await lock.release()
  const again = await python.ask({ op: 'acquire', name })
  assert.ok(again.acquired && again.token > token)
  await python.ask({ op: 'release', name })
})

test('one fair lock: one queue across languages, served in order', async () => {
  const name = `shared-fair:${randomUUID()}`
  const lock = new ratelock.FairLock(name, { url: redis.url, ttlMs: 10_000 })
  const first = await lock.acquire({ timeoutMs: 2000 })
  const pythonTurn = python.ask({ op: 'fair_acquire', name })
  await until(async () => (await lock.state()).waiting === 1)
  let nodeGranted = false
  const nodeTurn = lock.acquire({ timeoutMs: 10_000 }).then((hold) => {
    nodeGranted = true
    return hold
  })
  await until(async () => (await lock.state()).waiting === 2)
  await first.release()
  const pythonGrant = await pythonTurn
  assert.ok(pythonGrant.acquired && pythonGrant.token > first.fencingToken, 'Python queued first, so it goes first')
  assert.equal(nodeGranted, false, 'Node waits behind Python')
  await python.ask({ op: 'fair_release', name })
  const node = await nodeTurn
  assert.ok(node.fencingToken > pythonGrant.token)
  await node.release()
})

test('one read-write lock: a Node writer waiting holds back a Python reader', async () => {
  const name = `shared-rw:${randomUUID()}`
  const rw = new ratelock.ReadWriteLock(name, { url: redis.url, ttlMs: 10_000 })
  assert.equal((await python.ask({ op: 'try_read', name })).acquired, true)
  assert.equal(await rw.tryAcquireWrite(), null, 'Node cannot write while Python reads')
  const writing = rw.acquireWrite({ timeoutMs: 10_000 })
  await until(async () => (await rw.state()).waitingWriters === 1)
  assert.equal((await python.ask({ op: 'try_read', name })).acquired, false, 'a writer waits: no new readers')
  await python.ask({ op: 'release_read', name })
  const hold = await writing
  assert.equal((await rw.state()).writerFence, hold.fencingToken)
  await hold.release()
})

/** Polls `check` every 10 ms until it is true, for at most 5 s. */
async function until(check) {
  const deadline = Date.now() + 5000
  while (!(await check())) {
    assert.ok(Date.now() < deadline, 'timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
