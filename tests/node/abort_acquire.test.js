'use strict'
// An acquire's `signal` (an AbortSignal), for every lock kind on memory and on Redis: an abort stops the
// wait with the signal's reason and leaves nothing taken (a fair lock's place is withdrawn at once, not
// when its waiter lease lapses), an aborted signal refuses before any call, and `using` never runs its
// work.

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { after, before, test } = require('node:test')

const ratelock = require('../../bindings-node')
const { RedisServer } = require('./redis-server')

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Each kind as `{ make(options), take(handle, acquireOptions) }`, on one fresh name per call. */
const KINDS = {
  DistributedLock: {
    make: (name, options) => new ratelock.DistributedLock(name, options),
    take: (lock, options) => lock.acquire(options),
  },
  Semaphore: {
    make: (name, options) => new ratelock.Semaphore(name, 1, options),
    take: (permits, options) => permits.acquire(options),
  },
  FairLock: {
    make: (name, options) => new ratelock.FairLock(name, options),
    take: (lock, options) => lock.acquire(options),
  },
  'ReadWriteLock (write)': {
    make: (name, options) => new ratelock.ReadWriteLock(name, options),
    take: (lock, options) => lock.acquireWrite(options),
  },
}

/** How the first holder gives its hold back, whatever the kind answered its acquire with. */
async function giveBack(handle, hold) {
  if (hold && typeof hold.release === 'function') return hold.release()
  return handle.release()
}

for (const store of ['memory', 'redis']) {
  for (const [kind, { make, take }] of Object.entries(KINDS)) {
    test(`${store}: ${kind}: an aborted acquire rejects with the signal's reason and leaves nothing taken`, async () => {
      const name = `abort:${randomUUID()}`
      const options = store === 'redis' ? { url: redis.url } : {}
      const holder = make(name, options)
      const waiter = make(name, options)
      const held = await take(holder)
      const controller = new AbortController()
      const reason = new Error('the caller gave up')
      const waiting = take(waiter, { signal: controller.signal })
      await sleep(100)
      const abortedAt = Date.now()
      controller.abort(reason)
      await assert.rejects(waiting, (error) => error === reason)
      assert.ok(Date.now() - abortedAt < 2000, 'the wait stopped when the signal aborted')
      await giveBack(holder, held)
      // The aborted waiter holds nothing and queues nowhere: a third handle is granted at once.
      const third = make(name, options)
      const granted = await take(third, { timeoutMs: 1000 })
      await giveBack(third, granted)
    })
  }
}

test('redis: an aborted fair-lock waiter gives its place back at once, not when its lease lapses', async () => {
  const name = `abort:${randomUUID()}`
  // A place lasts 30 s unless renewed: a place left behind would hold the next waiter for that long.
  const options = { url: redis.url, waiterTtlMs: 30_000 }
  const holder = new ratelock.FairLock(name, options)
  const quitter = new ratelock.FairLock(name, options)
  const held = await holder.acquire()
  const controller = new AbortController()
  const quitting = quitter.acquire({ signal: controller.signal })
  const deadline = Date.now() + 5000
  while ((await holder.state()).waiting !== 1) {
    assert.ok(Date.now() < deadline, 'the waiter queued')
    await sleep(5)
  }
  controller.abort()
  await assert.rejects(quitting, (error) => error.name === 'AbortError')
  while ((await holder.state()).waiting !== 0) {
    assert.ok(Date.now() < deadline, 'the aborted waiter withdrew its place')
    await sleep(5)
  }
  await held.release()
  const next = await new ratelock.FairLock(name, options).acquire({ timeoutMs: 2000 })
  await next.release()
})

test('an already aborted signal refuses before any call, and a signal of another type is an invalid argument', async () => {
  const lock = new ratelock.DistributedLock(`abort:${randomUUID()}`, { url: redis.url })
  const reason = new Error('aborted before the call')
  await assert.rejects(lock.acquire({ signal: AbortSignal.abort(reason) }), (error) => error === reason)
  assert.equal(await lock.isLocked(), false)
  await assert.rejects(lock.acquire({ signal: 'stop' }), (error) => {
    assert.ok(error instanceof ratelock.InvalidArgumentError)
    assert.match(error.message, /`signal`.*AbortSignal/)
    return true
  })
})

test('using() with an aborted wait never runs its work', async () => {
  const name = `abort:${randomUUID()}`
  const holder = new ratelock.DistributedLock(name, { url: redis.url })
  await holder.acquire()
  let ran = false
  const controller = new AbortController()
  const using = new ratelock.DistributedLock(name, { url: redis.url }).using(() => {
    ran = true
  }, { signal: controller.signal })
  await sleep(50)
  controller.abort()
  await assert.rejects(using, (error) => error.name === 'AbortError')
  assert.equal(ran, false)
  await holder.release()
})

for (const store of ['memory', 'redis']) {
  test(`${store}: a free lock whose acquire is aborted at once is not handed over, and stays free`, async () => {
    // The abort lands while the handle connects, or just as the grant comes back: either way the
    // caller asked not to hold it.
    const name = `abort:${randomUUID()}`
    const options = store === 'redis' ? { url: redis.url } : {}
    const lock = new ratelock.DistributedLock(name, options)
    const controller = new AbortController()
    const acquiring = lock.acquire({ signal: controller.signal })
    controller.abort()
    await assert.rejects(acquiring, (error) => error.name === 'AbortError')
    assert.equal(lock.fencingToken, null)
    assert.equal(await new ratelock.DistributedLock(name, options).tryAcquire(), true, 'the lock was left free')
  })
}

test('one AbortSignal shared by many waits adds one listener (no MaxListenersExceededWarning)', async () => {
  // Each wait added its own listener: past ten, Node warned of a possible leak.
  const warned = []
  const onWarning = (warning) => warned.push(warning.name)
  process.on('warning', onWarning)
  const controller = new AbortController()
  const seats = new ratelock.Semaphore(`shared-signal:${Math.random()}`, 2)
  const limiter = new ratelock.Limiter()
  const job = `shared-signal:${Math.random()}`
  await limiter.hit(job, '1/second burst 1')
  const waits = [
    ...Array.from({ length: 20 }, () => seats.using(() => new Promise((resolve) => setTimeout(resolve, 5)), { signal: controller.signal })),
    ...Array.from({ length: 12 }, () => limiter.wait(job, '1/second burst 1', { maxWaitMs: 60_000, signal: controller.signal }).catch((error) => error)),
  ]
  await new Promise((resolve) => setTimeout(resolve, 300))
  controller.abort(new Error('gave up'))
  await Promise.all(waits.map((wait) => wait.catch(() => {})))
  await new Promise((resolve) => setImmediate(resolve))
  process.off('warning', onWarning)
  assert.deepEqual(warned, [])
  assert.equal(await seats.inUse(), 0)
})
