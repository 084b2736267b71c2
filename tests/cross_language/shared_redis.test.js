'use strict'
// Python and Node on one Redis: the same key and rule give one shared limit, the same lock name one
// holder, and fencing tokens keep rising across the two languages. The Python side is
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
