'use strict'
// DistributedLock and Semaphore: mutual exclusion across child processes with fencing checks, the
// AbortSignal of using() when the lock is deleted under it, re-entry, permits, and typed errors.

const assert = require('node:assert/strict')
const { execFile, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
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

test('four processes take turns: never two holders, tokens rise, the resource refuses nothing', async () => {
  const name = fresh('lock')
  const resource = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ratelock-lock-')), 'resource.json')
  fs.writeFileSync(resource, JSON.stringify({ token: 0, pid: 0 }))
  const worker = path.join(__dirname, 'lock-worker.js')
  const runs = Array.from({ length: 4 }, () =>
    promisify(execFile)(process.execPath, [worker, redis.url, name, resource, '25']),
  )
  const reports = (await Promise.all(runs)).map(({ stdout }) => JSON.parse(stdout))
  const tokens = reports.flatMap((report) => report.tokens)
  assert.deepEqual(reports.flatMap((report) => report.violations), [])
  assert.equal(tokens.length, 100)
  assert.equal(new Set(tokens).size, 100, 'every grant has its own fencing token')
  for (const report of reports) {
    assert.deepEqual(report.tokens, [...report.tokens].sort((a, b) => a - b), 'a process sees its tokens rise')
  }
})

for (const store of ['memory', 'redis']) {
  const url = () => (store === 'redis' ? redis.url : undefined)

  test(`${store}: using() aborts its signal when the lock is deleted under it, then rejects`, async () => {
    const name = fresh('lock')
    const lock = new ratelock.DistributedLock(name, { url: url(), ttlMs: 300 })
    const operator = new ratelock.DistributedLock(name, { url: url() })
    let reason
    await assert.rejects(
      lock.using(async (signal) => {
        assert.equal(signal.aborted, false)
        assert.equal(await operator.forceRelease(), true)
        const aborted = new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        await Promise.race([aborted, sleep(3000)])
        assert.equal(signal.aborted, true, 'the signal aborts within a renewal period')
        reason = signal.reason
      }),
      ratelock.LockLostError,
    )
    assert.ok(reason instanceof ratelock.LockLostError)
    assert.match(reason.message, /held by another/, 'the abort says why')
    assert.equal(lock.fencingToken, null)
  })

  test(`${store}: using() gives back the hold it took, not the instance's newest`, async () => {
    // One instance shared by two callers: A's hold is deleted under it and B takes the lock through
    // the same instance. A's using() then gave back B's hold (the newest), freeing the lock while B
    // worked.
    const name = fresh('lock')
    const lock = new ratelock.DistributedLock(name, { url: url(), ttlMs: 5000 })
    const operator = new ratelock.DistributedLock(name, { url: url() })
    let bHolds
    const bHeld = new Promise((resolve) => (bHolds = resolve))
    const a = lock.using(async () => {
      assert.equal(await operator.forceRelease(), true)
      await lock.acquire({ timeoutMs: 1000 }) // B
      bHolds()
    })
    await bHeld
    await assert.rejects(a, ratelock.LockLostError) // A's own hold, deleted under it
    assert.equal(await operator.tryAcquire(), false, "B's hold is still held")
    assert.equal(await lock.release(), 'released')
    assert.equal(await lock.isLocked(), false)
  })

  test(`${store}: using() resolves to what the work resolves to and releases after a throw`, async () => {
    const name = fresh('lock')
    const lock = new ratelock.DistributedLock(name, { url: url() })
    assert.equal(await lock.using(async (signal) => (signal.aborted ? 'lost' : 'done')), 'done')
    await assert.rejects(lock.using(async () => { throw new Error('work failed') }), /work failed/)
    assert.equal(await lock.isLocked(), false, 'released after the throw')
  })

  test(`${store}: a held lock makes others wait, time out or find it busy; tokens rise`, async () => {
    const name = fresh('lock')
    const holder = new ratelock.DistributedLock(name, { url: url(), ttlMs: 5000 })
    const waiter = new ratelock.DistributedLock(name, { url: url() })
    const first = await holder.acquire()
    assert.equal(holder.fencingToken, first)
    assert.equal(await waiter.tryAcquire(), false)
    await assert.rejects(waiter.acquire({ timeoutMs: 100 }), (error) => {
      assert.ok(error instanceof ratelock.WaitTimeoutError)
      assert.equal(error.code, 'ERR_RATELOCK_WAIT_TIMEOUT')
      return true
    })
    const waiting = waiter.acquire({ timeoutMs: 3000 })
    await sleep(20)
    await holder.release()
    const second = await waiting
    assert.ok(second > first, `${second} > ${first}`)
    assert.ok((await waiter.remainingTtlMs()) > 0)
    await waiter.release()
    assert.equal(await waiter.remainingTtlMs(), null)
  })

  test(`${store}: release and extend say when the lock is not held or was lost`, async () => {
    const name = fresh('lock')
    const lock = new ratelock.DistributedLock(name, { url: url(), ttlMs: 150, autoRenew: false })
    await assert.rejects(lock.release(), ratelock.LockNotOwnedError)
    await assert.rejects(lock.extend(), ratelock.LockNotOwnedError)
    await lock.acquire()
    await lock.extend({ ttlMs: 200 })
    await sleep(300)
    assert.equal(lock.lost, true)
    await assert.rejects(lock.extend(), ratelock.LockLostError)
    await assert.rejects(lock.release(), ratelock.LockLostError)
  })

  test(`${store}: a reentrant lock is taken again by its holder and kept until the last release`, async () => {
    const name = fresh('lock')
    const lock = new ratelock.DistributedLock(name, { url: url(), reentrant: true })
    const token = await lock.acquire()
    assert.equal(await lock.acquire(), token, 're-entry keeps the token')
    assert.equal(await lock.release(), 'still_held')
    assert.equal(await lock.isLocked(), true)
    assert.equal(await lock.release(), 'released')
    assert.equal(await lock.isLocked(), false)
  })

  test(`${store}: a hold whose release finds it gone says how it was lost`, async () => {
    const name = fresh('fair')
    const fair = new ratelock.FairLock(name, { url: url(), autoRenew: false, ttlMs: 100 })
    const hold = await fair.acquire({ timeoutMs: 1000 })
    await sleep(200)
    await assert.rejects(hold.release(), ratelock.LockLostError)
    assert.equal(hold.lostReason, 'expired')
    const second = await fair.acquire({ timeoutMs: 1000 })
    assert.equal(await second.release(), 'released')
  })

  test(`${store}: a semaphore lets at most its permits in at once`, async () => {
    const seats = new ratelock.Semaphore(fresh('seats'), 3, { url: url() })
    const first = await seats.acquire()
    assert.ok(first instanceof ratelock.PermitGuard, 'a permit is a PermitGuard, as in Python')
    assert.equal(ratelock.Permit, ratelock.PermitGuard, 'the earlier name still works')
    await first.release()
    let inside = 0
    let most = 0
    await Promise.all(
      Array.from({ length: 12 }, () =>
        seats.using(async () => {
          inside += 1
          most = Math.max(most, inside)
          await sleep(10)
          inside -= 1
        }, { timeoutMs: 5000 }),
      ),
    )
    assert.equal(most, 3)
    assert.equal(await seats.inUse(), 0)
    const permit = await seats.acquire()
    await permit.release()
    await assert.rejects(permit.release(), ratelock.LockNotOwnedError)
  })

  test(`${store}: timeoutMs 0 is one try and Infinity no limit, for every kind (as Python's 0 and -1)`, async () => {
    // Both were refused as invalid arguments, even on a free lock.
    const name = fresh('waits')
    const kinds = [
      [new ratelock.DistributedLock(name, { url: url() }), new ratelock.DistributedLock(name, { url: url() }), 'acquire'],
      [new ratelock.Semaphore(name, 1, { url: url() }), new ratelock.Semaphore(name, 1, { url: url() }), 'acquire'],
      [new ratelock.FairLock(name, { url: url() }), new ratelock.FairLock(name, { url: url() }), 'acquire'],
      [new ratelock.ReadWriteLock(name, { url: url() }), new ratelock.ReadWriteLock(name, { url: url() }), 'acquireWrite'],
    ]
    // DistributedLock's acquire answers the fencing token, and the lock gives its hold back; the other
    // kinds answer the hold.
    const giveBack = (lock, held) => (typeof held === 'object' ? held.release() : lock.release())
    for (const [holder, other, take] of kinds) {
      const held = await holder[take]({ timeoutMs: 0 })
      const started = performance.now()
      await assert.rejects(other[take]({ timeoutMs: 0 }), ratelock.WaitTimeoutError, holder.constructor.name)
      assert.ok(performance.now() - started < 1000, 'a wait that ends at once')
      await giveBack(holder, held)
      await giveBack(other, await other[take]({ timeoutMs: Infinity }))
    }
  })
}

test('bad lock arguments are named', async () => {
  assert.throws(() => new ratelock.DistributedLock(null), /`name`/)
  for (const Kind of [ratelock.DistributedLock, ratelock.FairLock, ratelock.ReadWriteLock]) {
    assert.throws(() => new Kind('n\ud800'), { code: 'ERR_RATELOCK_INVALID_ARGUMENT', message: /`name`.*surrogate/ })
  }
  assert.throws(() => new ratelock.Semaphore('\udc00', 2), { code: 'ERR_RATELOCK_INVALID_ARGUMENT', message: /`name`/ })
  await assert.rejects(new ratelock.DistributedLock('n'.repeat(65537)).acquire(), /`name`.*65536/)
  await assert.rejects(new ratelock.Semaphore('s'.repeat(65537), 2).acquire(), /`name`.*65536/)
  assert.throws(() => new ratelock.DistributedLock('n', { ttlMs: '5' }), /`ttlMs`/)
  assert.throws(() => new ratelock.Semaphore('s', 'three'), /`permits`/)
  await assert.rejects(new ratelock.DistributedLock('n', { ttlMs: -1 }).acquire(), /`ttlMs`/)
  await assert.rejects(new ratelock.Semaphore('s', 0).acquire(), /`permits`/)
  await assert.rejects(new ratelock.DistributedLock('n').using('not a function'), /`work`/)
  await assert.rejects(new ratelock.DistributedLock('n').acquire({ timeoutMs: NaN }), /`timeoutMs`/)
})

test('on the memory store, lock calls settle without waiting for the event loop (no hop to the runtime)', async () => {
  const name = fresh('memory-lock')
  const lock = new ratelock.DistributedLock(name)
  const seats = new ratelock.Semaphore(fresh('memory-seats'), 2)
  await lock.tryAcquire()
  await lock.release()
  await (await seats.acquire()).release()
  const fair = new ratelock.FairLock(fresh('memory-fair'))
  const shared = new ratelock.ReadWriteLock(fresh('memory-rw'))
  await fair.isLocked()
  await shared.state()
  // Each call's promise is settled when it is made: awaiting them all takes microtasks only, so a
  // callback queued for the event loop's next turn has not run yet.
  let turned = false
  setImmediate(() => {
    turned = true
  })
  assert.equal(await lock.tryAcquire(), true)
  await lock.extend()
  assert.equal(await lock.release(), 'released')
  await lock.acquire({ timeoutMs: 1000 })
  await lock.release()
  const permit = await seats.acquire()
  assert.equal(await seats.inUse(), 1)
  await permit.release()
  assert.equal(await lock.isLocked(), false)
  assert.equal(await lock.remainingTtlMs(), null)
  assert.equal(await lock.forceRelease(), false)
  assert.equal(await fair.isLocked(), false)
  assert.equal((await fair.state()).waiting, 0)
  assert.equal((await shared.state()).readers, 0)
  assert.equal(turned, false)
  // A wait that cannot end at once goes on on the runtime, and ends when the holder lets go.
  const holder = new ratelock.DistributedLock(name)
  await holder.acquire()
  let waited = false
  const waiting = lock.acquire({ timeoutMs: 5000 }).then((token) => {
    waited = true
    return token
  })
  await sleep(50)
  assert.equal(waited, false)
  await holder.release()
  assert.ok((await waiting) > 0)
  await lock.release()
})

test('after release rejects with LockLostError, the lock says how the hold was lost until the next hold', async () => {
  const lock = new ratelock.DistributedLock(`found-lost-${randomUUID()}`, { ttlMs: 100, autoRenew: false })
  assert.ok(await lock.tryAcquire())
  await new Promise((resolve) => setTimeout(resolve, 200))
  await assert.rejects(lock.release(), ratelock.LockLostError)
  assert.equal(lock.lost, true)
  assert.equal(lock.lostReason, 'expired')
  assert.ok(await lock.tryAcquire())
  assert.equal(lock.lostReason, null)
  assert.equal(await lock.release(), 'released')
})

test('using() whose give-back fails in an outage keeps no process alive until the lease ends', async () => {
  // Its watch for a loss was a pending native promise: after the release failed, the process could
  // not exit until the lease (here 20 s) ran out.
  const server = await RedisServer.start()
  try {
    const script = `
      const ratelock = require('ratelock')
      const started = Date.now()
      process.on('exit', () => console.log('exited after', Date.now() - started))
      const seats = new ratelock.Semaphore('seats', 1, { url: process.argv[1], ttlMs: 20000, timeoutMs: 200 })
      seats.using(async () => {
        console.log('working')
        await new Promise((resolve) => process.stdin.once('data', resolve))
      }).then(() => console.log('resolved'), (error) => console.log('rejected', error.name, error instanceof ratelock.StoreUnavailableError))
    `
    const child = require('node:child_process').spawn(process.execPath, ['-e', script, server.url], { cwd: __dirname })
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
      if (chunk.includes('working')) {
        server.pause()
        child.stdin.end('go\n')
      }
    })
    const code = await new Promise((resolve) => {
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      child.on('exit', (status) => {
        clearTimeout(killer)
        resolve(status)
      })
    })
    server.resume()
    assert.equal(code, 0, out)
    assert.match(out, /rejected \w+ true/)
    const exited = Number(out.match(/exited after (\d+)/)[1])
    assert.ok(exited < 10_000, `the process stayed ${exited} ms, until the lease ran out`)
  } finally {
    await server.close()
  }
})

test('a hold whose renewal was refused for good still tells why after its release rejects', async () => {
  // The release's own error (a protocol error) dropped the hold: lost, lostReason and lostError then
  // answered false, null and null, and the renewal's refusal could no longer be read.
  const name = fresh('refused')
  const lock = new ratelock.DistributedLock(name, { url: redis.url, ttlMs: 300 })
  const rejected = await lock.using(async (signal) => {
    await redis.command('SET', `rl:{${name}}:lock`, 'not a lease')
    for (let waited = 0; !signal.aborted && waited < 3000; waited += 20) await sleep(20)
    assert.ok(signal.aborted, 'the refused renewal aborts the signal')
  }).then(() => null, (error) => error)
  assert.ok(rejected instanceof ratelock.RatelockError, String(rejected))
  assert.equal(lock.lost, true)
  assert.equal(lock.lostReason, 'failed')
  assert.ok(lock.lostError instanceof ratelock.ProtocolError, String(lock.lostError))
})

test('a hold collected before its release is warned of (its guard gave it back silently)', () => {
  const script = `
    const ratelock = require('ratelock')
    process.on('warning', (warning) => { if (warning.code === 'RATELOCK_HOLD_DROPPED') console.log('warned:', warning.message) })
    const settle = async () => { for (let i = 0; i < 5; i++) { globalThis.gc(); await new Promise((resolve) => setTimeout(resolve, 20)) } }
    ;(async () => {
      const seats = new ratelock.Semaphore('seats', 1)
      await seats.acquire()
      const kept = await new ratelock.FairLock('fair').acquire()
      await settle()
      await kept.release()
      await settle()
      console.log('in use:', await seats.inUse())
    })()
  `
  const ran = spawnSync(process.execPath, ['--expose-gc', '-e', script], { cwd: __dirname, encoding: 'utf8', timeout: 30_000 })
  assert.equal(ran.status, 0, ran.stderr)
  const warned = ran.stdout.split('\n').filter((line) => line.startsWith('warned:'))
  assert.equal(warned.length, 1, ran.stdout)
  assert.match(warned[0], /a permit hold was garbage-collected before its release/)
  assert.match(ran.stdout, /in use: 0/)
})

test('a hold whose signal was read is still collected, warned of and given back', () => {
  // The lost watch behind \`signal\` held the guard (its callback closed over it), so a hold dropped
  // after its signal was read was renewed and kept for good: never collected, never warned of.
  const script = `
    const ratelock = require('ratelock')
    process.on('warning', (warning) => { if (warning.code === 'RATELOCK_HOLD_DROPPED') console.log('warned:', warning.message) })
    const settle = async () => { for (let i = 0; i < 15; i++) { globalThis.gc(); await new Promise((resolve) => setTimeout(resolve, 100)) } }
    ;(async () => {
      const fair = new ratelock.FairLock('signalled', { ttlMs: 400 })
      let signal = (await fair.acquire()).signal
      await settle()
      console.log('locked:', await fair.isLocked(), 'aborted:', signal.aborted)
    })()
  `
  const ran = spawnSync(process.execPath, ['--expose-gc', '-e', script], { cwd: __dirname, encoding: 'utf8', timeout: 30_000 })
  assert.equal(ran.status, 0, ran.stderr)
  assert.match(ran.stdout, /warned: a fair lock hold was garbage-collected before its release/)
  assert.match(ran.stdout, /locked: false aborted: false/)
})

test('a lease length out of range names ttlMs, as JavaScript spells it', async () => {
  // The core's name (`ttl`) came through.
  await assert.rejects(new ratelock.DistributedLock(fresh('short'), { ttlMs: 2 }).acquire(), { code: 'ERR_RATELOCK_INVALID_ARGUMENT', message: /`ttlMs`/ })
  const permit = await new ratelock.Semaphore(fresh('short'), 1).acquire()
  await assert.rejects(permit.extend({ ttlMs: 0.5 }), { code: 'ERR_RATELOCK_INVALID_ARGUMENT', message: /`ttlMs`/ })
  await permit.release()
})
