'use strict'
// Outages on a real redis-server, through the wire client and through Express over HTTP: nothing is
// opened before the first call, so a limiter (and an app) starts while Redis is down; calls follow
// `onError` through the circuit breaker while the server is stopped or frozen (SIGSTOP) and use it
// again once it returns; `local` decides on this process's share; a wrong password or a missing ACL
// permission reject with ConfigurationError whatever `onError` says. Every loop is bounded.

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { test } = require('node:test')
const net = require('node:net')
const express = require('express')

const { DistributedLock, Limiter, ConfigurationError, StoreUnavailableError } = require('../../bindings-node')
const { rateLimit } = require('../../bindings-node/express')
const { RedisServer } = require('./redis-server')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Hits fresh keys until a decision is not degraded, within `budgetMs`. */
async function untilRecovered(limiter, rules, budgetMs = 5000) {
  const started = Date.now()
  while (Date.now() - started < budgetMs) {
    const decision = await limiter.hit(`recovery-${randomUUID()}`, rules).catch(() => null)
    if (decision && !decision.degraded) return Date.now() - started
    await sleep(10)
  }
  throw new Error(`not recovered within ${budgetMs} ms`)
}

test('a limiter starts with the server down and uses it once it is up', async () => {
  const server = await RedisServer.start()
  try {
    await server.stop()
    const limiter = new Limiter({ url: server.url, onError: 'allow', timeoutMs: 1000 })
    assert.equal(limiter.breakerState, 'closed', 'a fresh store is closed before the first call')
    for (let i = 0; i < 20; i++) {
      const decision = await limiter.hit('boot', '100/minute')
      assert.ok(decision.allowed && decision.degraded)
    }
    assert.notEqual(limiter.breakerState, 'closed')
    await assert.rejects(limiter.ping(), StoreUnavailableError)
    await server.startAgain()
    await untilRecovered(limiter, '100/minute')
    assert.equal(limiter.breakerState, 'closed')
    await limiter.ping()
  } finally {
    await server.close()
  }
})

test('a frozen server opens the breaker after one timeout and SIGCONT closes it', async () => {
  const server = await RedisServer.start()
  try {
    const limiter = new Limiter({ url: server.url, onError: 'deny', timeoutMs: 200 })
    assert.equal((await limiter.hit('frozen', '100/minute')).degraded, false)
    server.pause()
    const first = await limiter.hit('frozen', '100/minute')
    assert.ok(first.degraded && !first.allowed)
    assert.notEqual(limiter.breakerState, 'closed')
    for (let i = 0; i < 50; i++) assert.ok((await limiter.hit('frozen', '100/minute')).degraded)
    server.resume()
    await untilRecovered(limiter, '100/minute')
  } finally {
    await server.close()
  }
})

test('local fallback admits this process share and hands back to the server', async () => {
  const server = await RedisServer.start()
  try {
    const limiter = new Limiter({ url: server.url, onError: 'local', instances: 2, timeoutMs: 500 })
    assert.equal((await limiter.hit('shared', '10/minute')).degraded, false)
    await server.stop()
    let admitted = 0
    for (let i = 0; i < 30; i++) {
      const decision = await limiter.hit('shared', '10/minute')
      assert.ok(decision.degraded)
      admitted += decision.allowed ? 1 : 0
    }
    assert.equal(admitted, 5, 'one process of two gets half the burst')
    await server.startAgain()
    await untilRecovered(limiter, '10/minute')
    const back = await limiter.hit('shared', '10/minute')
    assert.ok(!back.degraded && back.allowed && back.remaining === 9)
  } finally {
    await server.close()
  }
})

test('a wrong password and a missing ACL permission reject under allow', async () => {
  const server = await RedisServer.start({ password: 'right' })
  try {
    const wrong = new Limiter({ url: `redis://:wrong@127.0.0.1:${server.port}/`, onError: 'allow' })
    await assert.rejects(wrong.hit('k', '10/second'), (error) => error instanceof ConfigurationError && /password/.test(error.message))
    assert.equal(wrong.breakerState, 'closed', 'no outage')
    await server.command('ACL', 'SETUSER', 'reader', 'on', '>pw', '~*', '+@read', '+ping')
    const reader = new Limiter({ url: `redis://reader:pw@127.0.0.1:${server.port}/`, onError: 'allow' })
    await assert.rejects(reader.hit('k', '10/second'), (error) => error instanceof ConfigurationError && /ACL/.test(error.message))
    await assert.rejects(new Limiter({ url: `redis://:wrong@127.0.0.1:${server.port}/` }).connect(), ConfigurationError)
  } finally {
    await server.close()
  }
})

test('a password set on a running server rejects every call after under allow, none admitted', async () => {
  // Redis answers a client that has not authenticated `ERR Protocol error: unauthenticated ...` for a
  // long command, then closes the connection: a call written on it before its close shows must not
  // become an outage that `allow` admits.
  const server = await RedisServer.start()
  try {
    const limiter = new Limiter({ url: server.url, onError: 'allow', timeoutMs: 300 })
    assert.equal((await limiter.hit('k', '1000/second')).degraded, false)
    await server.command('CONFIG', 'SET', 'requirepass', 'sekret')
    await new Promise((resolve, reject) => {
      const admin = net.connect({ host: '127.0.0.1', port: server.port }, () => admin.end('AUTH sekret\r\nCLIENT KILL TYPE normal SKIPME yes\r\n'))
      admin.on('error', reject).on('close', resolve).resume()
    })
    const answers = []
    for (let call = 0; call < 20; call++) {
      answers.push(await limiter.hit('k', '1000/second').then((decision) => `admitted degraded=${decision.degraded}`, (error) => error.constructor.name))
    }
    assert.deepEqual(answers, Array(20).fill('ConfigurationError'))
  } finally {
    await server.close()
  }
})

test('an Express app starts with Redis down, follows onError, and uses Redis once it is back', async () => {
  const server = await RedisServer.start()
  await server.stop()
  const limiter = new Limiter({ url: server.url, onError: 'allow', timeoutMs: 300, prefix: `x${randomUUID().slice(0, 8)}` })
  const app = express()
  app.get('/item', rateLimit({ limiter, rules: '3/minute', keyGenerator: () => 'everyone' }), (req, res) =>
    res.json({ degraded: req.rateLimit.degraded }),
  )
  const listening = await new Promise((resolve) => {
    const http = app.listen(0, '127.0.0.1', () => resolve(http))
  })
  const base = `http://127.0.0.1:${listening.address().port}`
  try {
    for (let i = 0; i < 6; i++) {
      const response = await fetch(`${base}/item`)
      assert.equal(response.status, 200)
      assert.equal((await response.json()).degraded, true)
    }
    await server.startAgain()
    const deadline = Date.now() + 5000
    while ((await (await fetch(`${base}/item`)).json()).degraded) {
      assert.ok(Date.now() < deadline, 'Redis is used again')
      await sleep(20)
    }
    const statuses = []
    for (let i = 0; i < 4; i++) statuses.push((await fetch(`${base}/item`)).status)
    assert.deepEqual(statuses, [200, 200, 429, 429])
  } finally {
    listening.closeAllConnections()
    await new Promise((resolve) => listening.close(resolve))
    await server.close()
  }
})

test('one breaker per store: a limiter made after the outage, not yet used, already sees it open', async () => {
  const server = await RedisServer.start()
  try {
    await server.stop()
    const url = server.url
    const first = new Limiter({ url, onError: 'allow', timeoutMs: 300 })
    assert.ok((await first.hit('shared-breaker', '10/minute')).degraded)
    assert.notEqual(first.breakerState, 'closed')
    // Another limiter on the same store (URL and timeout), with its own prefix and policy.
    const second = new Limiter({ url, prefix: 'other', onError: 'deny', timeoutMs: 300 })
    assert.notEqual(second.breakerState, 'closed', 'the same breaker, before its first call')
    const answer = await second.hit('shared-breaker', '10/minute')
    assert.ok(answer.degraded && !answer.allowed)
    // A different timeout is a different store, with a breaker of its own.
    assert.equal(new Limiter({ url, timeoutMs: 301 }).breakerState, 'closed')
    assert.equal(new Limiter().breakerState, null, 'the memory store has no breaker')
  } finally {
    await server.close()
  }
})

test('one breaker per store: the wire client opens it, and the lock path on the same store answers at once', async () => {
  const server = await RedisServer.start()
  try {
    const url = server.url
    const limiter = new Limiter({ url, onError: 'allow', timeoutMs: 300 })
    assert.equal((await limiter.hit('one-breaker', '10/minute')).degraded, false)
    const lock = new DistributedLock('one-breaker', { url, timeoutMs: 300 })
    server.pause()
    assert.ok((await limiter.hit('one-breaker', '10/minute')).degraded, 'the wire call timed out')
    assert.notEqual(limiter.breakerState, 'closed')
    const started = performance.now()
    await assert.rejects(lock.tryAcquire(), StoreUnavailableError)
    const took = performance.now() - started
    assert.ok(took < 150, `the lock answered through the open breaker in ${took.toFixed(0)} ms, not after its 300 ms timeout`)
  } finally {
    server.resume()
    await server.close()
  }
})

/**
 * A TCP server on `port` (0: any) that never answers and counts the connections that are not the
 * breaker's background probe (a probe's first bytes are a PING; the wire client's are its module check
 * or its call): connections a limiter opened for calls.
 */
async function knockCounter(port = 0) {
  const sockets = []
  let knocks = 0
  const server = net.createServer((socket) => {
    sockets.push(socket)
    socket.once('data', (chunk) => {
      if (!chunk.toString('latin1').startsWith('*1\r\n$4\r\nPING\r\n')) knocks++
    })
  })
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve))
  return {
    port: server.address().port,
    knocks: () => knocks,
    close() {
      for (const socket of sockets) socket.destroy()
      server.close()
    },
  }
}

test('while the breaker is open, calls are answered without opening connections', async () => {
  // A server that never answers: the first call times out and opens the breaker; the calls after it
  // are answered by the failure policy without a connection of their own.
  const silent = await knockCounter()
  try {
    const limiter = new Limiter({ url: `redis://127.0.0.1:${silent.port}`, onError: 'allow', timeoutMs: 200 })
    assert.ok((await limiter.hit('knock', '10/minute')).degraded, 'the first call timed out')
    assert.notEqual(limiter.breakerState, 'closed', 'the timeout opened the breaker')
    const before = silent.knocks()
    for (let i = 0; i < 100 && limiter.breakerState !== 'closed'; i++) {
      assert.ok((await limiter.hit('knock', '10/minute')).degraded)
    }
    await sleep(50)
    assert.equal(silent.knocks() - before, 0, 'no connection opened for a call while the breaker was open')
  } finally {
    silent.close()
  }
})

test('while the breaker is open after a refused connect, calls do not try to connect again', async () => {
  const probe = net.createServer()
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address()
  await new Promise((resolve) => probe.close(resolve))
  const limiter = new Limiter({ url: `redis://127.0.0.1:${port}`, onError: 'allow', timeoutMs: 211 })
  assert.ok((await limiter.hit('refused', '10/minute')).degraded, 'nothing listens: refused')
  assert.notEqual(limiter.breakerState, 'closed', 'the refused connect opened the breaker')
  // Something listens again, never answering: only the breaker's probe may connect.
  const counter = await knockCounter(port)
  try {
    for (let i = 0; i < 20; i++) assert.ok((await limiter.hit('refused', '10/minute')).degraded)
    await sleep(20)
    assert.equal(counter.knocks(), 0, 'no connection opened for a call while the breaker was open')
  } finally {
    counter.close()
  }
})

test('a refused connect says nothing was sent, and a timeout under 1 ms names timeoutMs', async () => {
  const probe = net.createServer()
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address()
  await new Promise((resolve) => probe.close(resolve))
  const limiter = new Limiter({ url: `redis://127.0.0.1:${port}`, timeoutMs: 223 })
  await assert.rejects(limiter.hit('refused', '10/minute'), (error) => {
    assert.ok(error instanceof StoreUnavailableError, String(error))
    assert.match(error.message, /connecting failed \(connect ECONNREFUSED 127\.0\.0\.1:\d+\); nothing was sent/)
    return true
  })
  await assert.rejects(new Limiter({ url: `redis://127.0.0.1:${port}`, timeoutMs: 0.5 }).hit('k', '10/minute'), (error) => {
    assert.match(error.message, /invalid argument `timeoutMs`: expected from 1 ms to 366 days, got 0\.5/)
    return true
  })
  // Past 366 days (the core's bound: a timeout near Duration::MAX overflowed a deadline, a panic).
  await assert.rejects(new Limiter({ url: `redis://127.0.0.1:${port}`, timeoutMs: 1e11 }).hit('k', '10/minute'), (error) => {
    assert.match(error.message, /invalid argument `timeoutMs`: expected from 1 ms to 366 days, got 100000000000/)
    return true
  })
})

test('using() whose work throws and whose release then fails rejects with the work\'s error, and a warning says the hold was not given back', async () => {
  const server = await RedisServer.start()
  const warnings = []
  const onWarning = (warning) => warnings.push(warning)
  process.on('warning', onWarning)
  try {
    const lock = new DistributedLock(`using-${randomUUID()}`, { url: server.url, timeoutMs: 300, autoRenew: false })
    await assert.rejects(
      lock.using(async () => {
        await server.stop('SIGKILL')
        throw new Error('the work failed')
      }),
      /the work failed/,
    )
    await sleep(10) // warnings are emitted on the next tick
    assert.ok(warnings.some((warning) => warning.code === 'RATELOCK_RELEASE_FAILED'), String(warnings))
  } finally {
    process.off('warning', onWarning)
    await server.close()
  }
})

test('an aborted wait booked by the local fallback refunds nothing on the server once it is back', async () => {
  // Booked in memory during an outage (onError 'local'), aborted once the server is back: its refund
  // went to the server, giving back a unit the server had never lent.
  const server = await RedisServer.start()
  try {
    const limiter = new Limiter({ url: server.url, onError: 'local', timeoutMs: 200 })
    const rules = '12/minute burst 1'
    const spent = await limiter.hit('job', rules)
    assert.ok(spent.allowed && !spent.degraded, 'spent on the server: the next unit in 5 s')
    server.pause()
    assert.ok((await limiter.hit('job', rules)).degraded, 'the local fallback answers')
    const controller = new AbortController()
    const waiting = limiter.wait('job', rules, { maxWaitMs: 10_000, signal: controller.signal }).catch((error) => error)
    await sleep(400) // booked locally, 5 s ahead
    server.resume()
    const deadline = Date.now() + 5000
    while ((await limiter.hit('recovery', '1000/second')).degraded) {
      assert.ok(Date.now() < deadline, 'the server is used again')
      await sleep(20)
    }
    controller.abort(new Error('gave up'))
    assert.match(String((await waiting).message), /gave up/)
    await sleep(300)
    const onTheServer = await limiter.peek('job', rules)
    assert.ok(!onTheServer.degraded)
    assert.ok(!onTheServer.allowed, "the server's unit was given back by a refund of a local booking")
  } finally {
    server.resume()
    await server.close()
  }
})

test('an aborted wait rejects with the abort reason also when its refund fails (a warning says so)', async () => {
  const server = await RedisServer.start()
  const warnings = []
  const onWarning = (warning) => warnings.push(warning)
  process.on('warning', onWarning)
  try {
    const limiter = new Limiter({ url: server.url, timeoutMs: 300 })
    await limiter.hit('wait-refund', '1/second burst 1')
    const controller = new AbortController()
    const waiting = limiter.wait('wait-refund', '1/second burst 1', { maxWaitMs: 5000, signal: controller.signal })
    await sleep(300) // inside the wait's sleep of about a second, after its booking
    await server.stop('SIGKILL')
    const reason = new Error('the caller gave up')
    controller.abort(reason)
    await assert.rejects(waiting, (error) => error === reason)
    await sleep(10)
    assert.ok(warnings.some((warning) => warning.code === 'RATELOCK_REFUND_FAILED'), String(warnings))
  } finally {
    process.off('warning', onWarning)
    await server.close()
  }
})

/** A TCP pass-through to `port` on a free loopback port that, once `cut()`, resets its open
 * connections and every one it takes until `restore()`. */
async function switchableFront(port) {
  const sockets = new Set()
  let down = false
  const front = net.createServer((socket) => {
    socket.on('error', () => {})
    if (down) return socket.destroy()
    const back = net.connect(port, '127.0.0.1')
    sockets.add(socket).add(back)
    back.on('error', () => socket.destroy())
    socket.on('close', () => back.destroy())
    back.on('close', () => socket.destroy())
    socket.pipe(back).pipe(socket)
  })
  front.cut = () => {
    down = true
    for (const socket of sockets) socket.destroy()
    sockets.clear()
  }
  front.restore = () => (down = false)
  front.stop = () => {
    front.cut()
    return new Promise((resolve) => front.close(resolve))
  }
  await new Promise((resolve) => front.listen(0, '127.0.0.1', resolve))
  return front
}

for (const query of ['', '?server_code=scripts']) {
  test(`over TLS, a trial call whose connection is lost mid-call opens the breaker again${query ? ` (${query})` : ''}`, async () => {
    // With no background probe the first call after the pause is the breaker's trial. Its connection
    // opens, then is cut while the server answers nothing (CLIENT PAUSE): the lost trial opens
    // the breaker again. It told the breaker nothing, which stayed half-open and refused every call
    // until the trial's limit passed.
    const server = await RedisServer.startWithTls()
    const front = await switchableFront(server.tlsPort)
    try {
      const url = `rediss://localhost:${front.address().port}/${query}`
      const limiter = new Limiter({ url, tlsRootCa: server.caPem, timeoutMs: 1000 })
      assert.equal((await limiter.hit('lost trial', '100/hour')).remaining, 99)
      front.cut()
      for (let i = 0; i < 20 && limiter.breakerState === 'closed'; i++) {
        await assert.rejects(limiter.hit('lost trial', '100/hour'), StoreUnavailableError)
      }
      assert.equal(limiter.breakerState, 'open')
      front.restore()
      await sleep(700) // past the breaker's pause
      await server.command('CLIENT', 'PAUSE', '1500')
      const trial = limiter.hit('lost trial', '100/hour').then(() => null, (error) => error)
      await sleep(500) // its connection opened, its call held by the pause
      assert.equal(limiter.breakerState, 'half-open', 'the trial is out')
      front.cut()
      assert.ok((await trial) instanceof StoreUnavailableError)
      assert.equal(limiter.breakerState, 'open')
    } finally {
      await front.stop()
      await server.close()
    }
  })
}

for (const query of ['', '?server_code=scripts']) {
  test(`over TLS (no background probe), the first call after the breaker's pause is its trial and reaches the server${query ? ` (${query})` : ''}`, async () => {
    // It was admitted once before its connection opened and refused by a second asking, so the trial
    // never went out; with no preamble to answer (server_code=scripts) every call was refused.
    const server = await RedisServer.startWithTls()
    const front = await switchableFront(server.tlsPort)
    try {
      const url = `rediss://localhost:${front.address().port}/${query}`
      const limiter = new Limiter({ url, tlsRootCa: server.caPem, timeoutMs: 300 })
      assert.equal((await limiter.hit('trial', '100/hour')).remaining, 99)
      front.cut()
      // The lost connection says nothing of the server; the connect after it, refused, opens the breaker.
      for (let i = 0; i < 20 && limiter.breakerState === 'closed'; i++) {
        await assert.rejects(limiter.hit('trial', '100/hour'), StoreUnavailableError)
      }
      assert.notEqual(limiter.breakerState, 'closed')
      front.restore()
      await sleep(700) // past the breaker's pause
      assert.equal((await limiter.hit('trial', '100/hour')).remaining, 98, 'the trial call went through')
      assert.equal(limiter.breakerState, 'closed')
    } finally {
      await front.stop()
      await server.close()
    }
  })
}
