'use strict'
// FairLock and ReadWriteLock on memory and Redis: first-come-first-served grants (also across
// processes), readers sharing and writers excluding, writer preference, the AbortSignal of a hold whose
// key is deleted, and typed errors for bad arguments.

const assert = require('node:assert/strict')
const { execFile } = require('node:child_process')
const path = require('node:path')
const { randomUUID } = require('node:crypto')
const { promisify } = require('node:util')
const { after, before, test } = require('node:test')

const ratelock = require('../../bindings-node')
const { RedisServer } = require('./redis-server')

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

const fresh = (kind) => `${kind}:${randomUUID()}`
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `probe()` until it returns true (fails after `ms`). */
async function until(what, probe, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await probe())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`)
    await sleep(5)
  }
}

/** Resolves when `signal` aborts, or after `ms` (then the caller's assertion fails). */
function aborted(signal, ms = 3000) {
  const abort = new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
  return Promise.race([abort, sleep(ms)])
}

const rising = (tokens) => tokens.every((token, i) => i === 0 || token > tokens[i - 1])

test('redis: waiting processes are granted the fair lock in the order they queued', async () => {
  const name = fresh('fair')
  const lock = new ratelock.FairLock(name, { url: redis.url })
  const first = await lock.acquire()
  const worker = path.join(__dirname, 'fair-lock-worker.js')
  const runs = []
  for (let label = 0; label < 4; label++) {
    runs.push(promisify(execFile)(process.execPath, [worker, redis.url, name, String(label)]))
    await until(`process ${label} queued`, async () => (await lock.state()).waiting === label + 1)
  }
  await first.release()
  const reports = (await Promise.all(runs)).map(({ stdout }) => JSON.parse(stdout))
  assert.deepEqual(
    reports.map((report) => report.error),
    [undefined, undefined, undefined, undefined],
  )
  const byToken = [...reports].sort((a, b) => a.token - b.token)
  assert.deepEqual(byToken.map((report) => report.label), [0, 1, 2, 3], 'grants follow the queue')
  assert.ok(byToken[0].token > first.fencingToken)
  assert.equal(new Set(reports.map((report) => report.pid)).size, 4)
  assert.equal((await lock.state()).waiting, 0)
})

for (const store of ['memory', 'redis']) {
  const url = () => (store === 'redis' ? redis.url : undefined)

  test(`${store}: fair lock grants waiting acquires first come, first served, with rising tokens`, async () => {
    const name = fresh('fair')
    const holder = new ratelock.FairLock(name, { url: url() })
    const first = await holder.acquire({ timeoutMs: 1000 })
    const order = []
    const tokens = []
    const waiters = []
    for (let i = 0; i < 5; i++) {
      const lock = new ratelock.FairLock(name, { url: url() })
      waiters.push(
        lock.acquire({ timeoutMs: 10_000 }).then(async (hold) => {
          order.push(i)
          tokens.push(hold.fencingToken)
          await sleep(5)
          await hold.release()
        }),
      )
      await until(`waiter ${i} queued`, async () => (await holder.state()).waiting === i + 1)
    }
    const state = await holder.state()
    assert.equal(state.held, true)
    assert.equal(state.holderFence, first.fencingToken)
    assert.ok(state.remainingMs > 0)
    await first.release()
    await Promise.all(waiters)
    assert.deepEqual(order, [0, 1, 2, 3, 4])
    assert.ok(rising([first.fencingToken, ...tokens]), `tokens rise: ${tokens}`)
    const after = await holder.state()
    assert.deepEqual([after.held, after.waiting, after.lastFence], [false, 0, tokens[4]])
  })

  test(`${store}: fair lock tryAcquire never cuts in front of a waiter`, async () => {
    const name = fresh('fair')
    const lock = new ratelock.FairLock(name, { url: url() })
    const other = new ratelock.FairLock(name, { url: url() })
    const first = await lock.acquire()
    assert.equal(await other.tryAcquire(), null, 'held')
    const waiting = other.acquire({ timeoutMs: 10_000 })
    await until('the waiter queued', async () => (await lock.state()).waiting === 1)
    await first.release()
    assert.equal(await lock.tryAcquire(), null, 'the waiter is first')
    const next = await waiting
    assert.ok(next.fencingToken > first.fencingToken)
    await next.release()
    const free = await lock.tryAcquire()
    assert.ok(free !== null, 'free and nobody waiting')
    assert.equal(await lock.isLocked(), true)
    await free.release()
    assert.equal(await lock.isLocked(), false)
  })

  test(`${store}: a fair lock wait that times out rejects and leaves the queue`, async () => {
    const name = fresh('fair')
    const lock = new ratelock.FairLock(name, { url: url() })
    const first = await lock.acquire()
    const started = Date.now()
    await assert.rejects(lock.acquire({ timeoutMs: 150 }), (error) => {
      assert.ok(error instanceof ratelock.WaitTimeoutError)
      assert.equal(error.code, 'ERR_RATELOCK_WAIT_TIMEOUT')
      return true
    })
    assert.ok(Date.now() - started >= 140, 'waited for the timeout')
    assert.equal((await lock.state()).waiting, 0, 'the timed-out waiter left the queue')
    await first.release()
    const next = await lock.tryAcquire()
    assert.ok(next !== null, 'nobody is left in front')
    await next.release()
  })

  test(`${store}: readers share, a writer excludes, holds of many concurrent promises never overlap`, async () => {
    const name = fresh('rw')
    const rw = new ratelock.ReadWriteLock(name, { url: url() })
    const readers = await Promise.all(Array.from({ length: 10 }, () => rw.acquireRead({ timeoutMs: 1000 })))
    assert.equal((await rw.state()).readers, 10)
    assert.equal(await rw.tryAcquireWrite(), null)
    await assert.rejects(rw.acquireWrite({ timeoutMs: 100 }), ratelock.WaitTimeoutError)
    await Promise.all(readers.map((hold) => hold.release()))

    const writer = await rw.acquireWrite({ timeoutMs: 1000 })
    const state = await rw.state()
    assert.deepEqual([state.writer, state.writerFence, state.readers], [true, writer.fencingToken, 0])
    assert.ok(state.writerRemainingMs > 0)
    assert.equal(await rw.tryAcquireRead(), null)
    assert.equal(await rw.tryAcquireWrite(), null)
    const blocked = Array.from({ length: 5 }, () => rw.acquireRead({ timeoutMs: 10_000 }))
    await sleep(50)
    await writer.release()
    const later = await Promise.all(blocked)
    assert.ok(later.every((hold) => hold.fencingToken > writer.fencingToken))
    await Promise.all(later.map((hold) => hold.release()))

    let reading = 0
    let writing = 0
    const overlaps = []
    const work = Array.from({ length: 24 }, (_, i) => {
      const write = i % 4 === 0
      const body = async (signal) => {
        assert.equal(signal.aborted, false)
        if (write) writing++
        else reading++
        if (writing > 1 || (writing === 1 && reading > 0)) overlaps.push({ reading, writing })
        await sleep(2)
        if (write) writing--
        else reading--
        return i
      }
      return write ? rw.usingWrite(body, { timeoutMs: 20_000 }) : rw.usingRead(body, { timeoutMs: 20_000 })
    })
    assert.deepEqual(await Promise.all(work), Array.from({ length: 24 }, (_, i) => i))
    assert.deepEqual(overlaps, [])
    const end = await rw.state()
    assert.deepEqual([end.readers, end.writer, end.waitingWriters], [0, false, 0])
  })

  test(`${store}: a waiting writer holds back a later reader (writer preference)`, async () => {
    const name = fresh('rw')
    const rw = new ratelock.ReadWriteLock(name, { url: url() })
    const reader = await rw.acquireRead()
    let written = false
    const writing = rw.acquireWrite({ timeoutMs: 10_000 }).then((hold) => {
      written = true
      return hold
    })
    await until('the writer waits', async () => (await rw.state()).waitingWriters === 1)
    assert.equal(await rw.tryAcquireRead(), null, 'a new reader is held back')
    await assert.rejects(rw.acquireRead({ timeoutMs: 100 }), ratelock.WaitTimeoutError)
    assert.equal(written, false)
    await reader.release()
    const writer = await writing
    assert.ok(writer.fencingToken > reader.fencingToken)
    await writer.release()
    const next = await rw.tryAcquireRead()
    assert.ok(next !== null)
    await next.release()
  })

  test(`${store}: without writer preference a later reader joins the readers`, async () => {
    const name = fresh('rw')
    const rw = new ratelock.ReadWriteLock(name, { url: url(), preferWriters: false })
    const reader = await rw.acquireRead()
    const writing = rw.acquireWrite({ timeoutMs: 10_000 })
    await sleep(100)
    assert.equal((await rw.state()).waitingWriters, 0)
    const second = await rw.tryAcquireRead()
    assert.ok(second !== null, 'a reader joins while the writer waits')
    assert.equal((await rw.state()).readers, 2)
    await reader.release()
    await second.release()
    const writer = await writing
    await writer.release()
  })

  test(`${store}: a lease hold extends, releases once, and reports its state`, async () => {
    const rw = new ratelock.ReadWriteLock(fresh('rw'), { url: url(), ttlMs: 1000, autoRenew: false })
    const hold = await rw.acquireWrite()
    assert.ok(hold instanceof ratelock.LeaseGuard)
    await hold.extend({ ttlMs: 5000 })
    assert.ok((await rw.state()).writerRemainingMs > 1000)
    assert.equal(hold.lost, false)
    assert.equal(hold.signal.aborted, false)
    await hold.release()
    await assert.rejects(hold.release(), ratelock.LockNotOwnedError)
    await assert.rejects(hold.extend(), ratelock.LockNotOwnedError)
  })

  test(`${store}: bad arguments give typed errors`, async () => {
    const expectInvalid = (error) => {
      assert.ok(error instanceof ratelock.InvalidArgumentError, String(error))
      assert.equal(error.code, 'ERR_RATELOCK_INVALID_ARGUMENT')
      return true
    }
    assert.throws(() => new ratelock.FairLock(42), expectInvalid)
    assert.throws(() => new ratelock.FairLock('x', 'options'), expectInvalid)
    assert.throws(() => new ratelock.FairLock('x', { waiterTtlMs: '5s' }), /waiterTtlMs/)
    assert.throws(() => new ratelock.ReadWriteLock('x', { preferWriters: 'yes' }), /preferWriters/)
    assert.throws(() => new ratelock.ReadWriteLock(null), expectInvalid)
    await assert.rejects(new ratelock.FairLock(fresh('fair'), { url: url(), waiterTtlMs: 1 }).tryAcquire(), expectInvalid)
    await assert.rejects(new ratelock.FairLock(fresh('fair'), { url: url(), ttlMs: -1 }).acquire(), /ttlMs/)
    await assert.rejects(new ratelock.ReadWriteLock(fresh('rw'), { url: url(), ttlMs: 1 }).tryAcquireRead(), expectInvalid)
    const fair = new ratelock.FairLock(fresh('fair'), { url: url() })
    await assert.rejects(fair.acquire({ timeoutMs: 'soon' }), expectInvalid)
    await assert.rejects(fair.acquire({ timeoutMs: -5 }), /timeoutMs/)
    await assert.rejects(fair.using('work'), expectInvalid)
    const rw = new ratelock.ReadWriteLock(fresh('rw'), { url: url() })
    await assert.rejects(rw.usingWrite(null), expectInvalid)
    // Infinity is no limit and 0 one try, as Python's -1 and 0; NaN means neither.
    await assert.rejects(rw.acquireRead({ timeoutMs: Number.NaN }), expectInvalid)
    const hold = await rw.acquireRead()
    await assert.rejects(hold.extend({ ttlMs: 1 }), expectInvalid)
    await assert.rejects(hold.extend({ ttlMs: 'long' }), expectInvalid)
    await hold.release()
  })
}

test('redis: a fair lock freed without a wake-up (key deleted) still goes to the waiter, not to tryAcquire', async () => {
  const name = fresh('fair')
  const lock = new ratelock.FairLock(name, { url: redis.url, waiterTtlMs: 2000 })
  const first = await lock.acquire()
  const waiting = new ratelock.FairLock(name, { url: redis.url, waiterTtlMs: 2000 }).acquire({ timeoutMs: 10_000 })
  await until('the waiter queued', async () => (await lock.state()).waiting === 1)
  assert.equal(await redis.command('DEL', `rl:{${name}}:fair`), '1')
  const free = await lock.state()
  // The waiter renews its place every second; on the rare run where it did so in between, it holds now.
  if (!free.held) assert.equal(free.waiting, 1, 'free, with the waiter still in line')
  assert.equal(await lock.tryAcquire(), null, 'tryAcquire does not cut in')
  const next = await waiting
  assert.ok(next.fencingToken > first.fencingToken)
  await next.release()
  await assert.rejects(first.release(), ratelock.LockLostError)
})

test('redis: using() aborts its signal when the fair lock key is deleted under it, then rejects', async () => {
  const name = fresh('fair')
  const lock = new ratelock.FairLock(name, { url: redis.url, ttlMs: 300 })
  let reason
  await assert.rejects(
    lock.using(async (signal) => {
      assert.equal(signal.aborted, false)
      assert.equal(await redis.command('DEL', `rl:{${name}}:fair`), '1')
      await aborted(signal)
      assert.equal(signal.aborted, true, 'the signal aborts within a renewal period')
      reason = signal.reason
    }),
    ratelock.LockLostError,
  )
  assert.ok(reason instanceof ratelock.LockLostError)
  assert.equal(await lock.isLocked(), false)
})

test('redis: usingWrite() aborts its signal when the writer key is deleted under it', async () => {
  const name = fresh('rw')
  const rw = new ratelock.ReadWriteLock(name, { url: redis.url, ttlMs: 300 })
  let reason
  await assert.rejects(
    rw.usingWrite(async (signal) => {
      assert.equal(await redis.command('DEL', `rl:{${name}}:rw-writer`), '1')
      await aborted(signal)
      reason = signal.reason
    }),
    ratelock.LockLostError,
  )
  assert.ok(reason instanceof ratelock.LockLostError)
  const hold = await rw.acquireWrite({ timeoutMs: 1000 })
  const signal = hold.signal
  await redis.command('DEL', `rl:{${name}}:rw-writer`)
  await aborted(signal)
  assert.equal(signal.aborted, true)
  assert.equal(hold.lost, true)
  await assert.rejects(hold.release(), ratelock.LockLostError)
})

test('LeaseHold is the deprecated name of LeaseGuard', () => {
  const ratelock = require('../../bindings-node')
  assert.equal(ratelock.LeaseHold, ratelock.LeaseGuard)
})
